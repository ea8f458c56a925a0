import type { EvalReport } from './eval-report.js';
import { RUN_SCORER } from './eval-runner.js';

/**
 * The report as JUnit XML, which CI systems (GitHub Actions reporters, GitLab, Jenkins)
 * show as test results: one `<testcase>` a case, a `<failure>` per failing scorer (an
 * `<error>` when the case did not run), and the reply in `<system-out>`.
 */
export function junitXml(report: EvalReport): string {
  const { summary } = report;
  const errors = report.cases.filter((c) => c.error !== undefined).length;
  const failures = summary.failed - errors;
  const seconds = (ms: number) => (ms / 1000).toFixed(3);
  const suite = attr(report.dataset);
  const lines = [
    '<?xml version="1.0" encoding="UTF-8"?>',
    `<testsuites name="trellis eval" tests="${summary.cases}" failures="${failures}" errors="${errors}" time="${seconds(report.durationMs)}">`,
    `  <testsuite name="${suite}" tests="${summary.cases}" failures="${failures}" errors="${errors}" time="${seconds(report.durationMs)}" timestamp="${attr(report.startedAt)}">`,
  ];
  if (report.model !== undefined)
    lines.push('    <properties>', `      <property name="model" value="${attr(report.model)}"/>`, '    </properties>');
  for (const c of report.cases) {
    lines.push(`    <testcase classname="${suite}" name="${attr(c.id)}" time="${seconds(c.latencyMs)}">`);
    for (const s of c.scores.filter((x) => !x.pass)) {
      const tag = s.scorer === RUN_SCORER ? 'error' : 'failure';
      lines.push(
        `      <${tag} type="${attr(s.scorer)}" message="${attr(`${s.scorer}: ${s.detail}`)}">${text(`${s.scorer} scored ${s.score.toFixed(2)}: ${s.detail}`)}</${tag}>`,
      );
    }
    if (c.reply !== '') lines.push(`      <system-out>${text(c.reply)}</system-out>`);
    lines.push('    </testcase>');
  }
  lines.push('  </testsuite>', '</testsuites>', '');
  return lines.join('\n');
}

/** Characters XML 1.0 cannot hold at all, even escaped. */
const NOT_XML = /[^\u0009\u000a\u000d\u0020-\ud7ff\ue000-\ufffd\u{10000}-\u{10ffff}]/gu;

function text(value: string): string {
  return value.replace(NOT_XML, '\ufffd').replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
}

function attr(value: string): string {
  return text(value).replace(/"/g, '&quot;').replace(/\n/g, '&#10;').replace(/\r/g, '&#13;').replace(/\t/g, '&#9;');
}
