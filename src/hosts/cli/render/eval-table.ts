import type { BaselineComparison, EvalReport } from '../../../../eval.js';
import { escapeControl } from './terminal-text.js';

/**
 * The run as a table, one row a case — result, score, time, tokens, and for a failed case
 * what its first failing scorer said — then one line of figures and one per scorer.
 */
export function evalTableLines(report: EvalReport, width = 120): string[] {
  const rows = report.cases.map((c) => {
    const failed = c.scores.find((s) => !s.pass);
    return [
      c.id,
      c.pass ? 'pass' : 'FAIL',
      c.score.toFixed(2),
      `${Math.round(c.latencyMs)}`,
      `${c.tokens}`,
      failed ? `${failed.scorer}: ${failed.detail}` : '',
    ];
  });
  const head = ['case', 'result', 'score', 'ms', 'tokens', 'why'];
  const widths = head.slice(0, 5).map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: readonly string[]) => {
    const fixed = cells
      .slice(0, 5)
      .map((c, i) => (i >= 2 ? c.padStart(widths[i]!) : c.padEnd(widths[i]!)))
      .join('  ');
    const room = Math.max(20, width - fixed.length - 2);
    const why = oneLine(cells[5]!);
    return `${fixed}  ${why.length > room ? `${why.slice(0, room - 1)}…` : why}`.trimEnd();
  };
  const { summary } = report;
  const lines = [line(head), ...rows.map(line), ''];
  lines.push(
    `${summary.cases} case${summary.cases === 1 ? '' : 's'}: ${summary.passed} passed, ${summary.failed} failed (pass rate ${percent(summary.passRate)}), mean score ${summary.meanScore.toFixed(3)}, ${summary.tokens} tokens, ${(report.durationMs / 1000).toFixed(1)} s${report.model ? ` — ${report.model}` : ''}`,
  );
  const scorers = Object.entries(summary.scorers).map(([name, s]) => `${name} ${s.passed}/${s.cases}`);
  if (scorers.length > 0) lines.push(`scorers: ${scorers.join(', ')}`);
  return lines.map(escapeControl);
}

/** How the run compares with the baseline, in lines; the last says whether it regressed. */
export function baselineLines(comparison: BaselineComparison, file: string): string[] {
  const { passRateDrop, meanScoreDrop, threshold } = comparison;
  const change = (drop: number) => (drop > 0 ? `down ${points(drop)}` : drop < 0 ? `up ${points(-drop)}` : 'unchanged');
  const lines = [
    `baseline ${file}: pass rate ${change(passRateDrop)}, mean score ${change(meanScoreDrop)} (threshold ${points(threshold)})`,
  ];
  if (comparison.newlyFailing.length > 0)
    lines.push(`  failing now, passed in the baseline: ${comparison.newlyFailing.join(', ')}`);
  if (comparison.lowered.length > 0)
    lines.push(
      `  lower scores: ${comparison.lowered.map((l) => `${l.id} ${l.from.toFixed(2)} → ${l.to.toFixed(2)}`).join(', ')}`,
    );
  if (comparison.fixed.length > 0) lines.push(`  passing now, failed in the baseline: ${comparison.fixed.join(', ')}`);
  if (comparison.missing.length > 0) lines.push(`  in the baseline but not run: ${comparison.missing.join(', ')}`);
  if (comparison.added.length > 0) lines.push(`  new cases, not in the baseline: ${comparison.added.join(', ')}`);
  return lines.map(escapeControl);
}

function percent(x: number): string {
  return `${(x * 100).toFixed(1)} %`;
}

function points(x: number): string {
  return `${(x * 100).toFixed(1)} points`;
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim();
}
