import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { MemoryStore, type Agent, type Trellis } from 'trellis';
import { describeEval, type EvalTestApi } from 'trellis/testing';
import { createDeskApp, DESK_AGENT } from '../../../examples/sql-report-desk/desk-app.js';
import { deskScriptedModel } from '../../../examples/sql-report-desk/desk-model.js';
import { DbPlugin } from '../../../examples/sql-report-desk/plugins/db.plugin.js';

const DATASET = fileURLToPath(new URL('../../../examples/sql-report-desk/evals/desk.jsonl', import.meta.url));

let app: Trellis;
let agent: Agent;
beforeAll(async () => {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-describe-eval-'));
  app = await createDeskApp({
    store: new MemoryStore(),
    databasePath: join(dir, 'desk.db'),
    exportDir: join(dir, 'exports'),
    logFile: false,
  });
  agent = app.agent({ ...DESK_AGENT, model: deskScriptedModel({ exportDir: join(dir, 'exports') }) });
});
afterAll(() => app.stop());

// The example's dataset as jest tests: one `it` a case.
describeEval('the SQL report desk', {
  dataset: DATASET,
  session: (c) => agent.session(undefined, { context: c.context }),
});

describe('describeEval', () => {
  /** A jest-like api that collects the tests instead of registering them. */
  function collect(): { api: EvalTestApi; suites: string[]; tests: { name: string; run: () => Promise<void> }[] } {
    const suites: string[] = [];
    const tests: { name: string; run: () => Promise<void> }[] = [];
    return {
      suites,
      tests,
      api: { describe: (name, body) => (suites.push(name), body()), it: (name, run) => void tests.push({ name, run }) },
    };
  }

  it('makes one test a case, named by id and input, and only the tagged ones with tags', () => {
    const all = collect();
    describeEval('desk', { dataset: DATASET, session: () => agent.session(), api: all.api });
    expect(all.suites).toEqual(['desk']);
    expect(all.tests.map((t) => t.name)).toEqual([
      'top-customers: Who are our top three customers by revenue?',
      'top-customers-figures: Which customers spent the most with us?',
      'recovers-from-a-bad-column: Rank the customers by what they spent on paid orders.',
      'export-waits-for-approval: Please export the top customers as a CSV file.',
    ]);
    const tagged = collect();
    describeEval('desk', { dataset: DATASET, tags: ['export'], session: () => agent.session(), api: tagged.api });
    expect(tagged.tests).toHaveLength(1);
  });

  it("a case's test fails with each failing scorer, the reply and the calls, when a plugin of the example is broken", async () => {
    let broken: Agent | undefined;
    const { api, tests } = collect();
    describeEval('desk', { dataset: DATASET, session: () => broken!.session(), api });
    const search = DbPlugin.prototype.search;
    DbPlugin.prototype.search = async function returnsNothing(this: DbPlugin, input, ctx) {
      const result = await search.call(this, input, ctx);
      return { ...result, rows: [], rowCount: 0 };
    };
    const dir = mkdtempSync(join(tmpdir(), 'trellis-describe-eval-'));
    const brokenApp = await createDeskApp({
      databasePath: join(dir, 'desk.db'),
      exportDir: join(dir, 'exports'),
      logFile: false,
    });
    DbPlugin.prototype.search = search;
    try {
      broken = brokenApp.agent({ ...DESK_AGENT, model: deskScriptedModel() });
      await expect(tests[0]!.run()).rejects.toThrow(
        /eval case 'top-customers' failed:\n {2}✗ contains \(0\.00\): missing "Barbara Liskov"[\s\S]*reply: "Top customers by paid revenue:\\n"\n {2}tool calls: db\.search \(failed\) → db\.search/,
      );
    } finally {
      await brokenApp.stop();
    }
    // The same test over the intact app passes.
    broken = agent;
    await expect(tests[0]!.run()).resolves.toBeUndefined();
  });
});
