import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, ScriptedModel, TrellisError, type Trellis } from '../../../index.js';
import { createDeskApp, DESK_AGENT } from '../../../examples/sql-report-desk/desk-app.js';
import { deskScriptedModel } from '../../../examples/sql-report-desk/desk-model.js';
import { parseDataset } from '../../../src/hosts/eval/eval-case.js';
import { runEval } from '../../../src/hosts/eval/eval-runner.js';

const DATASET = [
  '{"id":"top","input":"Who are our top customers?","expected":{"contains":["Top customers"],"regex":"/\\\\$\\\\d+\\\\.\\\\d{2}/","toolCalls":[{"name":"db.search"}]},"budgets":{"rounds":4}}',
  '{"id":"wrong-tool","input":"Who are our top customers?","expected":{"toolCalls":[{"name":"export.csv"}]}}',
  '{"id":"judged","input":"Who are our top customers?","rubric":"Names customers with figures"}',
].join('\n');

describe('runEval over the SQL report desk with its scripted model', () => {
  let app: Trellis;
  beforeAll(async () => {
    const dir = mkdtempSync(join(tmpdir(), 'trellis-eval-'));
    app = await createDeskApp({
      store: new MemoryStore(),
      databasePath: join(dir, 'desk.db'),
      exportDir: join(dir, 'exports'),
      logFile: false,
    });
  });
  afterAll(() => app.stop());

  it('scores contains, regex, trajectory, budgets and the judge, and fails what does not match', async () => {
    const agent = app.agent({ ...DESK_AGENT, model: deskScriptedModel() });
    const judge = new ScriptedModel((request) =>
      /\$\d/.test(request.messages.at(-1)!.content)
        ? '{"score":0.9,"reason":"figures given"}'
        : '{"score":0.1,"reason":"no figures"}',
    );
    const results = await runEval({
      cases: parseDataset(DATASET, 'desk.jsonl'),
      session: () => agent.session(),
      concurrency: 2,
      judge: { model: judge },
    });
    expect(results.map((r) => [r.id, r.pass])).toEqual([
      ['top', true],
      ['wrong-tool', false],
      ['judged', true],
    ]);
    expect(results[0]!.toolCalls.map((c) => c.name)).toEqual(['db.search', 'db.search']);
    expect(results[1]!.scores.find((s) => s.scorer === 'trajectory')!.detail).toContain('expected in-order export.csv');
    expect(results[2]!.scores.find((s) => s.scorer === 'judge')!.score).toBe(0.9);
  });

  it('refuses a malformed dataset with every problem named by line', () => {
    expect(() =>
      parseDataset('{"input":""}\nnot json\n{"input":"x","expected":{"toolOrder":"sideways"}}', 'bad.jsonl'),
    ).toThrow(TrellisError);
    try {
      parseDataset('{"input":""}\nnot json', 'bad.jsonl');
    } catch (error) {
      expect((error as TrellisError).code).toBe('InvalidDataset');
      expect((error as Error).message).toMatch(/line 1: "input" must be a non-empty string[\s\S]*line 2: not JSON/);
    }
  });
});
