import { readFileSync } from 'node:fs';
import { apiReport, packageEntries, REPORT_PATH } from '../../support/api-report.js';

/**
 * The public API report (`docs/public-api.md`) is the API as it is: regenerated from the
 * sources here and compared with the committed file, so every change to what an entry
 * exports, or to the declaration of an exported name, is a diff someone reviews. When this
 * fails on purpose, run `npm run api:report` and commit the file with the change.
 */

/**
 * The lines that differ, in the shape of a unified diff (committed `-`, regenerated `+`), with a
 * little context. The common head and tail are cut first, so the line-by-line table covers only
 * the changed middle; a middle too large for it is shown whole.
 */
function lineDiff(committed: string, regenerated: string, context = 2): string {
  const a = committed.split('\n');
  const b = regenerated.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (tail < a.length - head && tail < b.length - head && a[a.length - 1 - tail] === b[b.length - 1 - tail]) tail++;
  const x = a.slice(head, a.length - tail);
  const y = b.slice(head, b.length - tail);
  const ops: { op: ' ' | '-' | '+'; line: string; at: number }[] = a
    .slice(Math.max(0, head - context), head)
    .map((line, k) => ({ op: ' ', line, at: head - Math.min(head, context) + k }));
  if (x.length * y.length > 4_000_000) {
    ops.push(
      ...x.map((line) => ({ op: '-' as const, line, at: head })),
      ...y.map((line, k) => ({ op: '+' as const, line, at: head + k })),
    );
  } else {
    // Longest common subsequence of the middles.
    const lcs = Array.from({ length: x.length + 1 }, () => new Uint32Array(y.length + 1));
    for (let i = x.length - 1; i >= 0; i--)
      for (let j = y.length - 1; j >= 0; j--)
        lcs[i]![j] = x[i] === y[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
    let i = 0;
    let j = 0;
    while (i < x.length || j < y.length) {
      if (i < x.length && j < y.length && x[i] === y[j]) ops.push({ op: ' ', line: x[i++]!, at: head + j++ });
      else if (i < x.length && (j === y.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!))
        ops.push({ op: '-', line: x[i++]!, at: head + j });
      else ops.push({ op: '+', line: y[j]!, at: head + j++ });
    }
  }
  ops.push(
    ...b
      .slice(b.length - tail, b.length - tail + context)
      .map((line, k) => ({ op: ' ' as const, line, at: b.length - tail + k })),
  );
  const near = ops.map((_, k) => ops.slice(Math.max(0, k - context), k + context + 1).some((o) => o.op !== ' '));
  const out: string[] = [];
  ops.forEach((o, k) => {
    if (!near[k]) return;
    if (k === 0 || !near[k - 1]) out.push(`@@ line ${o.at + 1} of the regenerated report @@`);
    out.push(`${o.op} ${o.line}`.trimEnd());
  });
  return out.join('\n');
}

describe('the public API report', () => {
  let regenerated: string;
  beforeAll(() => {
    regenerated = apiReport();
  }, 120_000);

  it('docs/public-api.md is the API the sources export (else: npm run api:report, and review the diff)', () => {
    const committed = readFileSync(REPORT_PATH, 'utf8');
    const diff =
      committed === regenerated
        ? ''
        : `docs/public-api.md is out of date; run \`npm run api:report\` and commit it. What changed:\n${lineDiff(committed, regenerated)}`;
    expect(diff).toBe('');
  });

  it('covers every entry of package.json, each name with its kind and declaration', () => {
    const entries = packageEntries();
    expect(entries.map((entry) => entry.name)).toEqual(
      expect.arrayContaining(['trellis', 'trellis/plugin', 'trellis/plugins/memory', 'trellis/host']),
    );
    for (const entry of entries) expect(regenerated).toContain(`## \`${entry.name}\`\n\n\`${entry.file}\`: `);
    expect(regenerated).toContain('// Trellis: class\nclass Trellis {');
    expect(regenerated).toContain('// TurnResult: interface\ninterface TurnResult<TOutput = unknown> {');
  });

  it('leaves out what the published .d.ts leaves out: members marked @internal, and private members', () => {
    const session = /\/\/ Session: class\n(class Session[^]*?\n\})/.exec(regenerated)?.[1] ?? '';
    expect(session).toContain('send(message: string');
    expect(session).toContain('get turnRunning(): boolean;');
    for (const internal of ['busy', 'release()', 'restate(', 'DELEGATE', '#private'])
      expect(session).not.toContain(internal);
  });

  it('the diff names what changed, line by line', () => {
    expect(lineDiff('a\nb\nc', 'a\nB\nc', 0)).toBe('@@ line 2 of the regenerated report @@\n- b\n+ B');
    expect(lineDiff('x\ny', 'x\ny\nz', 1)).toBe('@@ line 2 of the regenerated report @@\n  y\n+ z');
    expect(lineDiff('p\n\nq', 'p\n\nr', 1)).toBe('@@ line 2 of the regenerated report @@\n\n- q\n+ r');
  });
});
