import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { MemoryStore, ScriptedModel } from '../../../index.js';
import { createDeskApp, DESK_AGENT } from '../../../examples/sql-report-desk/desk-app.js';
import { openDeskDatabase } from '../../../examples/sql-report-desk/desk-database.js';
import { ReadOnlyQueries } from '../../../examples/sql-report-desk/read-only-query.js';

const ENDLESS = 'WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT count(*) FROM c';

let dir: string;
let db: Database.Database;
let queries: ReadOnlyQueries;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-query-'));
  db = openDeskDatabase(join(dir, 'desk.db'));
  queries = new ReadOnlyQueries(db, { timeoutMs: 1_000, maxRows: 500, maxCellChars: 100, maxResultBytes: 4_096 });
});

afterEach(() => {
  queries.close();
  db.close();
  rmSync(dir, { recursive: true, force: true });
});

describe('a query that never ends is stopped and the host keeps running', () => {
  it('an endless recursive CTE is SqlTimeout after timeoutMs; the event loop ticked meanwhile; the next query works', async () => {
    let ticks = 0;
    const ticker = setInterval(() => (ticks += 1), 50);
    const started = Date.now();
    try {
      await expect(queries.run(ENDLESS)).rejects.toMatchObject({
        code: 'SqlTimeout',
        message: expect.stringContaining('1000 ms'),
      });
    } finally {
      clearInterval(ticker);
    }
    const took = Date.now() - started;
    expect(took).toBeGreaterThanOrEqual(1_000);
    expect(took).toBeLessThan(5_000);
    expect(ticks).toBeGreaterThanOrEqual(10);
    expect(await queries.run('SELECT count(*) AS n FROM orders')).toMatchObject({ rows: [{ n: 10 }] });
  });

  it('through the agent: db.search answers SqlTimeout as a tool result and the turn completes', async () => {
    const app = await createDeskApp({
      store: new MemoryStore(),
      databasePath: join(dir, 'desk.db'),
      exportDir: join(dir, 'exports'),
      logFile: false,
    });
    try {
      const model = new ScriptedModel([{ toolCalls: [{ name: 'db.search', args: { sql: ENDLESS } }] }, 'gave up']);
      const result = await app
        .agent({ ...DESK_AGENT, model })
        .session()
        .send('count forever');
      expect(result.status).toBe('completed');
      expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'SqlTimeout', retryable: false } });
    } finally {
      await app.stop();
    }
  }, 15_000);
});

describe('results are capped: rows, cells, bytes, blobs', () => {
  it('zeroblob(50000000) comes back as a short summary, not 50 million numbers', async () => {
    // Building 50 MB takes SQLite about a second on a busy machine: this test is about size, not time.
    const result = await queries.run('SELECT zeroblob(50000000) AS b, 1 AS n', { timeoutMs: 15_000 });
    expect(result.rows).toEqual([{ b: '[blob 50000000 bytes]', n: 1 }]);
    expect(JSON.stringify(result).length).toBeLessThan(200);
  }, 20_000);

  it('a long text cell is cut to maxCellChars with its length', async () => {
    const result = await queries.run("SELECT printf('%.*c', 100000, 'x') AS t");
    expect(result.rows[0]!.t).toBe(`${'x'.repeat(100)}… [100000 characters]`);
  });

  it('rows stop at maxResultBytes, and the result says so', async () => {
    const result = await queries.run(
      "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 400) SELECT x, printf('%.*c', 50, 'y') AS pad FROM c",
    );
    expect(result).toMatchObject({ truncated: true, truncatedBy: 'bytes' });
    expect(Buffer.byteLength(JSON.stringify(result.rows))).toBeLessThanOrEqual(4_096);
    expect(result.rows.length).toBeGreaterThan(10);
  });

  it('rows stop at maxRows', async () => {
    const result = await queries.run('WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c', {
      maxRows: 7,
    });
    expect(result).toMatchObject({ rowCount: 7, truncated: true, truncatedBy: 'rows' });
  });
});

describe("one session's runaway queries do not hold up another session's (issue 34)", () => {
  /** Settles with when it settled (ms since `from`), whatever the outcome. */
  const settledAt = (work: Promise<unknown>, from: number) =>
    work.then(
      () => Date.now() - from,
      () => Date.now() - from,
    );

  it("four runaway queries of one session run one at a time; another session's SELECT 1 answers before the first of them is stopped", async () => {
    const started = Date.now();
    const runaway = Array.from({ length: 4 }, () => queries.run(ENDLESS, { timeoutMs: 1_000 }, 'greedy'));
    const outcomes = Promise.allSettled(runaway);
    const firstStopped = settledAt(runaway[0]!, started);
    const quick = queries.run('SELECT 1 AS one', {}, 'other');
    const quickAt = await settledAt(quick, started);

    expect(await quick).toMatchObject({ rows: [{ one: 1 }] });
    expect(quickAt).toBeLessThan(await firstStopped);
    // Before: every query of the desk waited in one line (21.9 s behind four runaway queries).
    expect(quickAt).toBeLessThan(5_000);
    expect(
      (await outcomes).map((o) => (o.status === 'rejected' ? (o.reason as { code?: string }).code : 'ok')),
    ).toEqual(['SqlTimeout', 'SqlTimeout', 'SqlTimeout', 'SqlTimeout']);
    // One at a time: the last was stopped no sooner than four timeouts after the start.
    expect(Date.now() - started).toBeGreaterThanOrEqual(4 * 1_000);
  }, 30_000);

  it("three sessions each with a runaway query and a fourth session's SELECT 1: it answers before any of them is stopped; with every process busy, a fifth waits its turn", async () => {
    const started = Date.now();
    const runaway = ['a', 'b', 'c'].map((session) => queries.run(ENDLESS, { timeoutMs: 2_000 }, session));
    const firstStopped = Promise.race(runaway.map((r) => settledAt(r, started)));
    const quickAt = await settledAt(queries.run('SELECT 1 AS one', {}, 'd'), started);
    expect(quickAt).toBeLessThan(await firstStopped);
    await Promise.allSettled(runaway);

    const small = new ReadOnlyQueries(
      db,
      { timeoutMs: 1_000, maxRows: 5, maxCellChars: 100, maxResultBytes: 4_096 },
      { processes: 1 },
    );
    try {
      const busy = small.run(ENDLESS, {}, 'a');
      const waiting = small.run('SELECT 1 AS one', {}, 'b');
      await expect(busy).rejects.toMatchObject({ code: 'SqlTimeout' });
      await expect(waiting).resolves.toMatchObject({ rows: [{ one: 1 }] });
    } finally {
      small.close();
    }
  }, 30_000);

  it("through the desk agent: a turn of another session completes while one session's db.search runs away", async () => {
    const app = await createDeskApp({
      store: new MemoryStore(),
      databasePath: join(dir, 'desk.db'),
      exportDir: join(dir, 'exports'),
      logFile: false,
    });
    try {
      const started = Date.now();
      const runaway = app
        .agent({
          ...DESK_AGENT,
          model: new ScriptedModel([{ toolCalls: [{ name: 'db.search', args: { sql: ENDLESS } }] }, 'gave up']),
        })
        .session('runaway')
        .send('count forever');
      const runawayAt = settledAt(runaway, started);
      const quick = await app
        .agent({
          ...DESK_AGENT,
          model: new ScriptedModel([
            { toolCalls: [{ name: 'db.search', args: { sql: 'SELECT count(*) AS n FROM orders' } }] },
            'ten',
          ]),
        })
        .session('quick')
        .send('how many orders?');
      const quickAt = Date.now() - started;
      expect(quick.toolCalls[0]).toMatchObject({ ok: true, value: { rows: [{ n: 10 }] } });
      expect(quickAt).toBeLessThan(await runawayAt);
      expect((await runaway).toolCalls[0]).toMatchObject({ ok: false, error: { code: 'SqlTimeout' } });
    } finally {
      await app.stop();
    }
  }, 30_000);
});
