import 'reflect-metadata';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type Database from 'better-sqlite3';
import { MemoryStore, ScriptedModel, SqliteStore, type SessionStore, type Trellis } from '../../../index.js';
import { LESSONS_KEY } from '../../../plugins/reflection/index.js';
import { createDeskApp, DESK_AGENT, LESSONS_HEADING } from '../../../examples/sql-report-desk/desk-app.js';
import { openDeskDatabase } from '../../../examples/sql-report-desk/desk-database.js';
import { BAD_QUERY, deskScriptedModel, GOOD_QUERY } from '../../../examples/sql-report-desk/desk-model.js';
import { csvField } from '../../../examples/sql-report-desk/plugins/export.plugin.js';
import { SQL_RULES } from '../../../examples/sql-report-desk/plugins/sql-strategy.plugin.js';
import { ReadOnlyQueries } from '../../../examples/sql-report-desk/read-only-query.js';
import { ReportCustomer, TopCustomersReport } from '../../../examples/sql-report-desk/report-card.js';

let dir: string;
let apps: Trellis[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-desk-'));
});

afterEach(async () => {
  for (const app of apps) await app.stop();
  apps = [];
  rmSync(dir, { recursive: true, force: true });
});

async function desk(store: SessionStore = new MemoryStore()): Promise<Trellis> {
  const app = await createDeskApp({
    store,
    databasePath: join(dir, 'desk.db'),
    exportDir: join(dir, 'exports'),
    logFile: false,
  });
  apps.push(app);
  return app;
}

/** Calls db.search once through a real turn and returns the tool result the model saw. */
async function search(sql: string) {
  const app = await desk();
  const model = new ScriptedModel([{ toolCalls: [{ name: 'db.search', args: { sql } }] }, 'ok']);
  const result = await app
    .agent({ ...DESK_AGENT, model })
    .session()
    .send('query');
  return result.toolCalls[0]!;
}

describe('db.search: read-only SQL', () => {
  it('answers one SELECT with columns and rows', async () => {
    const call = await search('SELECT name FROM customers ORDER BY id LIMIT 2');

    expect(call).toMatchObject({
      ok: true,
      value: {
        columns: ['name'],
        rows: [{ name: 'Ada Lovelace' }, { name: 'Grace Hopper' }],
        rowCount: 2,
        truncated: false,
      },
    });
  });

  it.each([
    ['stacked statements', 'SELECT 1; DROP TABLE customers', /more than one statement/],
    ['a write', "DELETE FROM orders WHERE status = 'paid'", /only a SELECT/],
    ['DDL', 'CREATE TABLE notes (x)', /only a SELECT/],
    ['a PRAGMA', 'PRAGMA writable_schema = 1', /only a SELECT/],
    ['a write hidden in a CTE', 'WITH x AS (SELECT 1) DELETE FROM orders', /would change the database/],
  ])('refuses %s with a clear SqlRefused result, and the data stays', async (_what, sql, reason) => {
    const call = await search(sql);

    expect(call.ok).toBe(false);
    expect(call.error).toMatchObject({ code: 'SqlRefused', retryable: false });
    expect(call.error!.message).toMatch(reason);
    const db = openDeskDatabase(join(dir, 'desk.db'));
    expect(db.prepare('SELECT COUNT(*) AS n FROM orders').get()).toEqual({ n: 10 });
    db.close();
  });

  it('reports an SQL mistake as SqlError with what SQLite said', async () => {
    const call = await search(BAD_QUERY);

    expect(call.error).toMatchObject({ code: 'SqlError' });
    expect(call.error!.message).toContain('no such column: o.total');
  });

  it('opens the database read-only and cuts results at the limit', async () => {
    const db: Database.Database = openDeskDatabase(join(dir, 'desk.db'));
    const queries = new ReadOnlyQueries(db);
    expect(db.readonly).toBe(true);
    expect(await queries.run('SELECT id FROM orders ORDER BY id', { maxRows: 3 })).toEqual({
      columns: ['id'],
      rows: [{ id: 1 }, { id: 2 }, { id: 3 }],
      rowCount: 3,
      truncated: true,
      truncatedBy: 'rows',
    });
    queries.close();
    db.close();
  });
});

describe('planning: strategy rules and reflection lessons', () => {
  it('injects the SQL rules every turn, and a failed call as a lesson from the next turn on', async () => {
    const app = await desk();
    const model = deskScriptedModel();
    const session = app.agent({ ...DESK_AGENT, model }).session();

    const first = await session.send('Who are the top customers?');
    expect(first.toolCalls.map((c) => c.ok)).toEqual([false, true]);
    expect(model.calls[0]!.messages[0]!.content).toContain(SQL_RULES);
    expect(model.calls[0]!.messages[0]!.content).not.toContain(LESSONS_HEADING);

    const second = await session.send('And again, please?');
    const secondTurn = model.calls.find((call) =>
      call.messages.some((m) => m.role === 'user' && m.content === 'And again, please?'),
    )!;
    const planned = secondTurn.messages.find((m) => m.role === 'system')!.content;
    expect(planned).toContain(`${LESSONS_HEADING}\n- db.search failed with SqlError`);
    expect(planned).toContain('no such column: o.total');
    // Having learned, the model goes straight to the working query.
    expect(second.toolCalls).toEqual([expect.objectContaining({ tool: 'db.search', ok: true })]);
    expect(session.transcript.at(-3)!.toolCalls![0]!.arguments).toBe(JSON.stringify({ sql: GOOD_QUERY }));
  });

  it('keeps lessons in the store: a new app on the same file still plans with them', async () => {
    const path = join(dir, 'trellis.db');
    const before = await desk(SqliteStore.open(path));
    await before
      .agent({ ...DESK_AGENT, model: deskScriptedModel() })
      .session('kept')
      .send('Who are the top customers?');
    await before.stop();

    const after = await desk(SqliteStore.open(path));
    const model = deskScriptedModel();
    const session = after.agent({ ...DESK_AGENT, model }).session('kept');
    await session.send('Who are the top customers?');

    expect(session.values[LESSONS_KEY]).toEqual([
      expect.objectContaining({ tool: 'db.search', code: 'SqlError', turn: 0 }),
    ]);
    expect(model.calls[0]!.messages[0]!.content).toContain(LESSONS_HEADING);
  });
});

describe('a typed report card for a dashboard', () => {
  it('answers send(…, { output: TopCustomersReport }) with the report card as an instance, from the real query, kept in the store', async () => {
    const store = new MemoryStore();
    const app = await desk(store);
    const model = deskScriptedModel();
    const session = app.agent({ ...DESK_AGENT, model }).session('card');

    const result = await session.send('Give me the top customers as a report card for the dashboard.', {
      output: TopCustomersReport,
    });

    expect(result.status).toBe('completed');
    expect(result.output).toBeInstanceOf(TopCustomersReport);
    expect(result.output!.customers[0]).toBeInstanceOf(ReportCustomer);
    expect(result.output).toMatchObject({
      headline: 'Barbara Liskov leads with $500.00 of paid revenue',
      currency: 'USD',
      totalRevenue: 1392,
      customers: [
        { name: 'Barbara Liskov', country: 'US', spent: 500 },
        { name: 'Grace Hopper', country: 'US', spent: 467 },
        { name: 'Ada Lovelace', country: 'UK', spent: 425 },
      ],
    });
    // The model was told what the answer must be (the scripted model has no native mode: in the system prompt too).
    expect(model.calls.at(-1)!.output?.name).toBe('TopCustomersReport');
    expect(model.calls.at(-1)!.messages[0]!.content).toContain('"totalRevenue"');
    expect((await store.load('card'))!.turns[0]!.output).toMatchObject({ totalRevenue: 1392 });
    // The same desk answers untyped questions as before.
    const plain = await session.send('Who are our top three customers by revenue?');
    expect(plain.output).toBeUndefined();
    expect(plain.reply).toContain('1. Barbara Liskov (US) — $500.00');
  });
});

describe('export.csv behind an approval gate', () => {
  const exportModel = () =>
    new ScriptedModel((request) =>
      request.messages.at(-1)?.role === 'tool'
        ? 'done'
        : {
            toolCalls: [
              {
                id: 'call_x',
                name: 'export.csv',
                args: { sql: 'SELECT id, name FROM customers ORDER BY id LIMIT 2', filename: 'two.csv' },
              },
            ],
          },
    );

  it('suspends the call; nothing is written until a human approves, then the file is written once', async () => {
    const app = await desk();
    const session = app.agent({ ...DESK_AGENT, model: exportModel() }).session();

    const asked = await session.send('export two customers');
    expect(asked.status).toBe('suspended');
    expect(asked.suspended).toEqual([
      expect.objectContaining({
        callId: 'call_x',
        tool: 'export.csv',
        ticket: expect.objectContaining({ allowedDecisions: ['approve', 'reject'] }),
      }),
    ]);
    expect(existsSync(join(dir, 'exports/two.csv'))).toBe(false);

    const done = await session.resume({ decisions: [{ callId: 'call_x', decision: 'approve' }] });
    expect(done.status).toBe('completed');
    expect(readFileSync(join(dir, 'exports/two.csv'), 'utf8')).toBe('id,name\n1,Ada Lovelace\n2,Grace Hopper\n');
  });

  it('never writes a rejected export, and refuses an edit the gate does not allow', async () => {
    const app = await desk();
    const session = app.agent({ ...DESK_AGENT, model: exportModel() }).session();
    await session.send('export two customers');

    await expect(
      session.resume({
        decisions: [{ callId: 'call_x', decision: 'edit', args: { sql: 'SELECT 1', filename: 'x.csv' } }],
      }),
    ).rejects.toMatchObject({ code: 'InvalidDecision' });
    const rejected = await session.resume({ decisions: [{ callId: 'call_x', decision: 'reject' }] });

    expect(rejected.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'Rejected' } });
    expect(existsSync(join(dir, 'exports'))).toBe(false);
  });

  it('quotes CSV fields that hold commas, quotes or line breaks', () => {
    expect([
      csvField('plain'),
      csvField('a,b'),
      csvField('say "hi"'),
      csvField('two\nlines'),
      csvField(null),
      csvField(4.5),
    ]).toEqual(['plain', '"a,b"', '"say ""hi"""', '"two\nlines"', '', '4.5']);
  });
});
