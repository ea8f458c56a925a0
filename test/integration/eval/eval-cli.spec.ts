import { mkdtempSync, readFileSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { DbPlugin } from '../../../examples/sql-report-desk/plugins/db.plugin.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';

/** The example's dataset and baseline, exactly as `npm run eval` runs them. */
const DATASET = fileURLToPath(new URL('../../../examples/sql-report-desk/evals/desk.jsonl', import.meta.url));
const BASELINE = fileURLToPath(new URL('../../../examples/sql-report-desk/evals/baseline.json', import.meta.url));

let cwd: string;
beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-eval-cli-')));
});
afterEach(() => rmSync(cwd, { recursive: true, force: true }));

async function cli(...args: string[]) {
  const io = fakeCliIo(cwd);
  const code = await runCli(['node', 'trellis', ...args], io);
  return { code, out: io.text(), err: io.stderr.join('\n') };
}

describe('trellis eval over the SQL report desk (what npm run eval runs), offline', () => {
  it('passes against its baseline, and writes the table, the JSON report and JUnit XML', async () => {
    const run = await cli(
      'eval',
      DATASET,
      '--offline',
      '--baseline',
      BASELINE,
      '--json',
      'out/report.json',
      '--junit',
      'out/junit.xml',
    );
    expect(run.err).not.toContain('trellis:');
    expect(run.code).toBe(0);
    expect(run.out).toMatch(/^case\s+result\s+score\s+ms\s+tokens\s+why$/m);
    expect(run.out).toMatch(/^top-customers\s+pass\s+1\.00/m);
    expect(run.out).toContain('4 cases: 4 passed, 0 failed (pass rate 100.0 %), mean score 1.000');
    expect(run.out).toContain('— scripted-desk');
    expect(run.out).toContain('pass rate unchanged, mean score unchanged (threshold 0.0 points)');
    const report = JSON.parse(readFileSync(join(cwd, 'out/report.json'), 'utf8')) as {
      summary: { passed: number };
      cases: { id: string; toolCalls: { name: string; ok: boolean }[] }[];
    };
    expect(report.summary.passed).toBe(4);
    expect(report.cases[0]!.toolCalls.map((c) => [c.name, c.ok])).toEqual([
      ['db.search', false],
      ['db.search', true],
    ]);
    const junit = readFileSync(join(cwd, 'out/junit.xml'), 'utf8');
    expect(junit).toContain('<testsuite name="');
    expect(junit.match(/<testcase /g)).toHaveLength(4);
    expect(junit).not.toContain('<failure');
  });

  it('fails, naming the cases, when a plugin of the example is broken on purpose (db.search drops all rows but the first)', async () => {
    const search = DbPlugin.prototype.search;
    DbPlugin.prototype.search = async function broken(this: DbPlugin, input, ctx) {
      const result = await search.call(this, input, ctx);
      return { ...result, rows: result.rows.slice(0, 1), rowCount: Math.min(1, result.rowCount) };
    };
    try {
      const run = await cli('eval', DATASET, '--offline', '--baseline', BASELINE, '--junit', 'junit.xml');
      expect(run.code).toBe(1);
      expect(run.out).toMatch(/^top-customers\s+FAIL\s+0\.\d\d .*contains: missing "Grace Hopper", "Ada Lovelace"/m);
      expect(run.out).toMatch(/^top-customers-figures\s+FAIL/m);
      expect(run.out).toMatch(/^export-waits-for-approval\s+pass/m);
      expect(run.out).toContain('failing now, passed in the baseline: top-customers, top-customers-figures');
      expect(run.err).toContain('trellis: The eval fell below the baseline');
      const junit = readFileSync(join(cwd, 'junit.xml'), 'utf8');
      expect(junit).toContain('failures="2"');
      expect(junit).toContain('<failure type="contains"');
      // Without a baseline, a failing case fails the run just the same.
      const bare = await cli('eval', DATASET, '--offline', '--tag', 'answers');
      expect(bare.code).toBe(1);
      expect(bare.err).toContain('trellis: 2 of 3 eval cases failed: top-customers, top-customers-figures');
    } finally {
      DbPlugin.prototype.search = search;
    }
  });

  it('compares only the cases both runs have, and --save-baseline records the run', async () => {
    const baseline = JSON.parse(readFileSync(BASELINE, 'utf8')) as {
      cases: Record<string, { pass: boolean; score: number }>;
    };
    baseline.cases['made-up'] = { pass: true, score: 1 };
    writeFileSync(join(cwd, 'baseline.json'), JSON.stringify(baseline));
    const saved = await cli(
      'eval',
      DATASET,
      '--offline',
      '--tag',
      'export',
      '--save-baseline',
      'new-baseline.json',
      '--baseline',
      'baseline.json',
    );
    expect(saved.code).toBe(0);
    expect(saved.out).toContain(
      'in the baseline but not run: top-customers, top-customers-figures, recovers-from-a-bad-column, made-up',
    );
    expect(JSON.parse(readFileSync(join(cwd, 'new-baseline.json'), 'utf8'))).toEqual({
      version: 1,
      dataset: expect.stringMatching(/evals\/desk\.jsonl$/),
      passRate: 1,
      meanScore: 1,
      cases: { 'export-waits-for-approval': { pass: true, score: 1 } },
    });
  });

  it('refuses bad input with a clear message: a missing dataset, a malformed one, bad flags, a bad baseline', async () => {
    const missing = await cli('eval', 'nope.jsonl', '--offline');
    expect(missing.code).toBe(1);
    expect(missing.err).toContain('nope.jsonl cannot be read: there is no such file');
    writeFileSync(join(cwd, 'bad.jsonl'), '{"input":"x","expected":{"toolOrder":"sideways"}}\n{"inptu":"y"}\n');
    const bad = await cli('eval', 'bad.jsonl', '--offline');
    expect(bad.code).toBe(1);
    expect(bad.err).toMatch(
      /line 1: "expected.toolOrder" is exact, in-order or any[\s\S]*line 2: unknown field 'inptu'/,
    );
    expect((await cli('eval', DATASET, '--threshold', '2')).code).toBe(2);
    expect((await cli('eval', DATASET, '--concurrency', '0')).code).toBe(2);
    writeFileSync(join(cwd, 'b.json'), '{"version":2}');
    const badBaseline = await cli('eval', DATASET, '--offline', '--baseline', 'b.json');
    expect(badBaseline.code).toBe(1);
    expect(badBaseline.err).toContain('b.json cannot be used: it is not a baseline of version 1');
  });

  it('--offline with a config that names no model object refuses, saying what to set', async () => {
    writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ model: 'gpt-4o-mini', store: 'x.db' }));
    const run = await cli('eval', DATASET, '--offline');
    expect(run.code).toBe(1);
    expect(run.err).toContain("--offline runs without a model provider's API");
  });
});
