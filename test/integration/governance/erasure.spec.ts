import 'reflect-metadata';
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsString } from 'class-validator';
import { Plugin, ScriptedModel, SqliteStore, Tool, Trellis, type EraseRequest, type ModelRequest, type ScriptedReply, type ToolContext } from '../../../index.js';
import { TurnEventRecorder } from '../../../src/dev/recording/turn-event-recorder.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService } from '../../support/services.js';

const MARKER = 'erase-me-7f3a@example.com';

class NoteInput {
  @IsString() text!: string;
}

/** A plugin holding user data of its own (a notes index by session), which it erases in `onErase`. */
@Plugin({ name: 'notebook', version: '1.0.0', owner: 'team-notes' })
class Notebook {
  static readonly notes = new Map<string, string[]>();
  static erased: EraseRequest[] = [];

  @Tool({ name: 'notebook.save', description: 'Saves a note.', input: NoteInput })
  save(input: NoteInput, ctx: ToolContext) {
    const id = ctx.sessionId;
    Notebook.notes.set(id, [...(Notebook.notes.get(id) ?? []), input.text]);
    return `saved ${input.text}`;
  }

  onErase(request: EraseRequest) {
    Notebook.erased.push(request);
    for (const id of request.sessionIds) Notebook.notes.delete(id);
  }
}

const script = (req: ModelRequest): ScriptedReply => {
  const last = req.messages.at(-1)!;
  if (last.role === 'tool') return `Noted: ${last.content}`;
  return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'notebook.save', args: { text: last.content } }] };
};

/** Every row of every table, as text: what a scan of the store finds. */
function tableText(path: string): string {
  const db = new Database(path, { readonly: true });
  try {
    const tables = db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").pluck().all() as string[];
    return tables.map((t) => JSON.stringify(db.prepare(`SELECT * FROM "${t}"`).all())).join('\n');
  } finally {
    db.close();
  }
}

const count = (text: string) => text.split(MARKER).length - 1;

describe('app.erase: a user seeded everywhere leaves nothing behind', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-erase-'));
    Notebook.notes.clear();
    Notebook.erased = [];
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it("erases a user's sessions, their turn events and the plugin's own data; other users' stay; the file holds 0 matches", async () => {
    const path = join(dir, 'trellis.db');
    const store = SqliteStore.open(path);
    const app = Trellis.create({ store });
    await app.install(Notebook);
    const recorder = new TurnEventRecorder(app.events$, store).start();
    const agent = app.agent({ name: 'desk', model: new ScriptedModel(script), instructions: '' });
    await agent.session('s-a', { context: { 'app.user_id': 'u-7f3a', 'app.tenant': 'acme' } }).send(`my email is ${MARKER}`);
    await agent.session('s-b', { context: { 'app.user_id': 'u-7f3a', 'app.tenant': 'acme' } }).send(`write to ${MARKER} please`);
    await agent.session('s-c', { context: { 'app.user_id': 'u-other', 'app.tenant': 'acme' } }).send('keep this one');
    await recorder.flushed();
    expect(count(tableText(path))).toBeGreaterThanOrEqual(6); // messages, turn records, events, state
    expect([...Notebook.notes.values()].flat().join()).toContain(MARKER);

    const report = await app.erase({ userId: 'u-7f3a' });
    expect(report.plugins).toEqual(['notebook']);
    expect([...report.sessions].sort()).toEqual(['s-a', 's-b']);
    expect(Notebook.erased[0]!.selector).toEqual({ userId: 'u-7f3a' });
    await recorder.stop();

    expect(count(tableText(path))).toBe(0);
    expect(count([...Notebook.notes.values()].flat().join())).toBe(0);
    expect((await store.list()).map((s) => s.id)).toEqual(['s-c']);
    expect(await store.load('s-a')).toBeUndefined();
    await app.stop();
    await store.close();
    // The bytes on disk too: secure delete zeroes freed pages, and closing checkpoints the WAL.
    // Without the compaction 15 copies were left in free pages (measured while writing this test).
    const raw = readFileSync(path, 'latin1') + (existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`, 'latin1') : '');
    expect(count(raw)).toBe(0);
  });

  it('erases by session, by tenant and by age; refuses an empty selector', async () => {
    const store = SqliteStore.open(join(dir, 'trellis.db'));
    const app = Trellis.create({ store });
    await app.install(Notebook);
    const agent = app.agent({ name: 'desk', model: new ScriptedModel(script), instructions: '' });
    await agent.session('t1', { context: { 'app.tenant': 'acme' } }).send('one');
    await agent.session('t2', { context: { 'app.tenant': 'globex' } }).send('two');
    await agent.session('t3', { context: { 'app.tenant': 'globex' } }).send('three');
    await expect(app.erase({})).rejects.toMatchObject({ code: 'InvalidOptions' });
    expect((await app.erase({ sessionId: 't1' })).sessions).toEqual(['t1']);
    expect((await app.erase({ olderThan: new Date(Date.now() - 60_000) })).sessions).toEqual([]);
    expect([...(await app.erase({ tenant: 'globex', olderThan: new Date(Date.now() + 1000) })).sessions].sort()).toEqual(['t2', 't3']);
    expect(await store.list()).toEqual([]);
    await app.stop();
    await store.close();
  });
});

let pgUp = false;
beforeAll(async () => {
  pgUp = await haveService('postgres', 'erasure on PostgreSQL');
});

describe('app.erase on PostgreSQL', () => {
  it("leaves 0 matches in every table of the store's schema, and keeps the other user's session", async () => {
    if (!pgUp) return;
    const schemas = new PostgresSchemas();
    try {
      const schema = schemas.next();
      const store = await schemas.open(schema);
      const app = Trellis.create({ store });
      await app.install(Notebook);
      const agent = app.agent({ name: 'desk', model: new ScriptedModel(script), instructions: '' });
      await agent.session('p-a', { context: { 'app.user_id': 'u-7f3a' } }).send(`my email is ${MARKER}`);
      await agent.session('p-b', { context: { 'app.user_id': 'u-other' } }).send('keep');
      const scan = async () => {
        const { rows } = await schemas.admin.query<{ tablename: string }>('SELECT tablename FROM pg_tables WHERE schemaname = $1', [schema]);
        let text = '';
        for (const { tablename } of rows) text += (await schemas.admin.query<{ row: string }>(`SELECT t::text AS row FROM "${schema}"."${tablename}" t`)).rows.map((r) => r.row).join('\n');
        return count(text);
      };
      expect(await scan()).toBeGreaterThan(0);
      expect((await app.erase({ userId: 'u-7f3a' })).sessions).toEqual(['p-a']);
      expect(await scan()).toBe(0);
      expect((await store.list()).map((x) => x.id)).toEqual(['p-b']);
      await app.stop();
      await store.close();
    } finally {
      await schemas.dropAll();
    }
  });
});
