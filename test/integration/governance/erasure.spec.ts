import 'reflect-metadata';
import Database from 'better-sqlite3';
import { randomUUID } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { IsString } from 'class-validator';
import { Redis } from 'ioredis';
import pino from 'pino';
import {
  LoggingMiddleware,
  Plugin,
  ScriptedModel,
  SqliteStore,
  Tool,
  Trellis,
  type ModelRequest,
  type ScriptedReply,
  type SessionStore,
  type ToolContext,
} from '../../../index.js';
import type { EraseRequest } from '../../../plugin.js';
import { createLogger, TRELLIS_LOGGER } from '../../../plugins/middleware/index.js';
import { TokenAccountingPlugin } from '../../../plugins/observation/index.js';
import { TrellisWorker, TurnQueue } from '../../../queue.js';
import { TurnEventRecorder } from '../../../src/hosts/dev/recording/turn-event-recorder.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';

const pgUp = await haveService('postgres', 'erasure on PostgreSQL');
const redisUp = await haveService('redis', 'erasure of queued turns in Redis');

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
    await agent
      .session('s-a', { context: { 'app.user_id': 'u-7f3a', 'app.tenant': 'acme' } })
      .send(`my email is ${MARKER}`);
    await agent
      .session('s-b', { context: { 'app.user_id': 'u-7f3a', 'app.tenant': 'acme' } })
      .send(`write to ${MARKER} please`);
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
    expect(
      [...(await app.erase({ tenant: 'globex', olderThan: new Date(Date.now() + 1000) })).sessions].sort(),
    ).toEqual(['t2', 't3']);
    expect(await store.list()).toEqual([]);
    await app.stop();
    await store.close();
  });
});

(pgUp ? describe : describe.skip)('app.erase on PostgreSQL', () => {
  it("leaves 0 matches in every table of the store's schema, and keeps the other user's session", async () => {
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
        const { rows } = await schemas.admin.query<{ tablename: string }>(
          'SELECT tablename FROM pg_tables WHERE schemaname = $1',
          [schema],
        );
        let text = '';
        for (const { tablename } of rows)
          text += (
            await schemas.admin.query<{ row: string }>(`SELECT t::text AS row FROM "${schema}"."${tablename}" t`)
          ).rows
            .map((r) => r.row)
            .join('\n');
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

/** The user seeded everywhere: their id is in their messages, tool arguments and results, context, job data, plugin data and log lines. */
const USER = 'u-erase-9c1d';
const OTHER = 'u-keep-4b2e';
const countOf = (text: string, what: string) => text.split(what).length - 1;

/** Every key under `prefix` with its value, whatever its type, as text: what a scan of Redis finds. */
async function redisText(redis: Redis, prefix: string): Promise<string> {
  const keys = await redis.keys(`${prefix}:*`);
  const parts: string[] = [];
  for (const key of keys) {
    const type = await redis.type(key);
    const value =
      type === 'string'
        ? await redis.get(key)
        : type === 'hash'
          ? await redis.hgetall(key)
          : type === 'list'
            ? await redis.lrange(key, 0, -1)
            : type === 'set'
              ? await redis.smembers(key)
              : type === 'zset'
                ? await redis.zrange(key, '0', '-1')
                : type === 'stream'
                  ? await redis.xrange(key, '-', '+')
                  : `(${type})`;
    parts.push(`${key} ${JSON.stringify(value)}`);
  }
  return parts.join('\n');
}

interface StoreUnderTest {
  readonly store: SessionStore;
  /** Every row of every table of the store, as text. */
  scan(): Promise<string>;
  close(): Promise<void>;
}

/**
 * Seeds USER in a store (two sessions, one run through the queue), in the turn queue's Redis
 * (a finished job with its result and events, and a queued first turn of a session the store
 * never saw), in the token accounting plugin's per-user totals and in a log file the logging
 * middleware writes with pino; erases USER with the queue; scans all of it: 0 matches, while
 * OTHER's session, totals and queued job stay.
 */
async function eraseEverywhere(opened: StoreUnderTest, dir: string): Promise<void> {
  const { store } = opened;
  const logFile = join(dir, 'app.log');
  const logger = createLogger({ destination: pino.destination({ dest: logFile, sync: true }) });
  const app = Trellis.create({
    store,
    middleware: [{ type: LoggingMiddleware }],
    providers: [{ provide: TRELLIS_LOGGER, useValue: logger }],
  });
  await app.install(Notebook);
  const { instance: tokens } = await app.install(TokenAccountingPlugin);
  const agent = app.agent({ name: 'desk', model: new ScriptedModel(script), instructions: '' });
  const prefix = `trellis_erase_${randomUUID().slice(0, 8)}`;
  const redis = new Redis(REDIS_URL);
  const queue = new TurnQueue({ url: REDIS_URL, prefix, pollMs: 100 });
  const worker = new TrellisWorker({
    url: REDIS_URL,
    prefix,
    store,
    agent: () => agent,
    eventRetention: { ms: 60_000 },
  });
  let working = false;
  try {
    await worker.start();
    working = true;
    const user = { 'app.user_id': USER, 'app.tenant': 'acme' };
    const queued = await queue.send({
      agent: 'desk',
      sessionId: `q-${USER}`,
      key: 'm1',
      message: `I am ${USER}, mail ${MARKER}`,
      context: user,
    });
    expect(queued.result.status).toBe('completed');
    await agent.session('d-1', { context: user }).send(`again ${USER} here`);
    await agent.session('d-2', { context: { 'app.user_id': OTHER } }).send(`I am ${OTHER}`);
    working = false;
    await worker.close();
    // Queued while no worker runs: a first turn whose session the store never saw, and the other user's.
    const waiting = await queue.enqueueSend({
      agent: 'desk',
      sessionId: `w-${USER}`,
      key: 'm1',
      message: `later ${USER}`,
      context: user,
    });
    const kept = await queue.enqueueSend({
      agent: 'desk',
      sessionId: `w-${OTHER}`,
      key: 'm1',
      message: `later ${OTHER}`,
      context: { 'app.user_id': OTHER },
    });
    for (const turn of [waiting, kept]) turn.result.catch(() => undefined);
    // Turns parked as poison keep their job's data for an operator (as a worker parks one): the user's goes, the other's stays.
    const parked = (sessionId: string, userId: string) =>
      JSON.stringify({
        jobId: `send.${sessionId}.p1`,
        kind: 'send',
        agent: 'desk',
        sessionId,
        crashes: 3,
        reason: 'parked',
        parkedAt: new Date().toISOString(),
        data: {
          kind: 'send',
          agent: 'desk',
          sessionId,
          key: 'p1',
          message: `crashing for ${userId}`,
          context: { 'app.user_id': userId },
        },
      });
    await redis.hset(
      `${prefix}:turns:parked:turns`,
      `send.p-${USER}.p1`,
      parked(`p-${USER}`, USER),
      `send.p-${OTHER}.p1`,
      parked(`p-${OTHER}`, OTHER),
    );

    const everything = async () =>
      `${await opened.scan()}\n${await redisText(redis, prefix)}\n${JSON.stringify(await tokens.userUsage(USER))}\n${JSON.stringify([...Notebook.notes.values()])}`;
    const before = await everything();
    expect(countOf(before, USER)).toBeGreaterThanOrEqual(10);
    expect(countOf(before, MARKER)).toBeGreaterThanOrEqual(3);
    expect(countOf(await redisText(redis, prefix), USER)).toBeGreaterThanOrEqual(4);
    expect((await tokens.userUsage(USER)).calls).toBe(4);

    const report = await app.erase({ userId: USER }, { also: [queue] });
    expect([...report.sessions].sort()).toEqual(['d-1', `q-${USER}`]);
    expect(report.plugins).toEqual(['notebook', 'tokens']);
    expect(report.also).toEqual(['TurnQueue']);

    const after = await everything();
    expect(countOf(after, USER)).toBe(0);
    expect(countOf(after, MARKER)).toBe(0);
    expect((await tokens.userUsage(USER)).calls).toBe(0);
    // The other user's session, totals, queued job and parked turn stay.
    expect(countOf(after, OTHER)).toBeGreaterThanOrEqual(3);
    expect(Object.keys(await redis.hgetall(`${prefix}:turns:parked:turns`))).toEqual([`send.p-${OTHER}.p1`]);
    expect((await tokens.userUsage(OTHER)).calls).toBe(2);
    // The log: written as the turns ran, with USER masked at write time (it cannot be erased later).
    const log = readFileSync(logFile, 'utf8');
    expect(countOf(log, '[user]')).toBeGreaterThanOrEqual(4);
    expect(countOf(log, USER)).toBe(0);
  } finally {
    await queue.close();
    if (working) await worker.close();
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await app.stop();
  }
}

(redisUp ? describe : describe.skip)(
  'app.erase of a user seeded everywhere: the store, the turn queue in Redis, plugins, the log',
  () => {
    let dir: string;
    beforeEach(() => {
      dir = mkdtempSync(join(tmpdir(), 'trellis-erase-'));
      Notebook.notes.clear();
      Notebook.erased = [];
    });
    afterEach(() => rmSync(dir, { recursive: true, force: true }));

    it('on SQLite (every table, the file and its WAL): 0 matches', async () => {
      const path = join(dir, 'trellis.db');
      const store = SqliteStore.open(path);
      await eraseEverywhere({ store, scan: async () => tableText(path), close: () => store.close() }, dir);
      await store.close();
      const raw =
        readFileSync(path, 'latin1') + (existsSync(`${path}-wal`) ? readFileSync(`${path}-wal`, 'latin1') : '');
      expect(countOf(raw, USER)).toBe(0);
      expect(countOf(raw, MARKER)).toBe(0);
    });

    it("refuses while a worker runs one of the sessions' turns, deleting nothing, and erases once it finished", async () => {
      const store = SqliteStore.open(join(dir, 'busy.db'));
      const app = Trellis.create({ store });
      const agent = app.agent({
        name: 'desk',
        model: new ScriptedModel(() => 'ok', { delayMs: 400 }),
        instructions: '',
      });
      const prefix = `trellis_erase_${randomUUID().slice(0, 8)}`;
      const redis = new Redis(REDIS_URL);
      const queue = new TurnQueue({ url: REDIS_URL, prefix, pollMs: 100 });
      const worker = new TrellisWorker({ url: REDIS_URL, prefix, store, agent: () => agent });
      try {
        await worker.start();
        const context = { 'app.user_id': USER };
        await queue.send({ agent: 'desk', sessionId: 'busy-1', key: 'm1', message: 'first', context });
        const started = new Promise<void>(
          (resolve) => void queue.watch('busy-1', (e) => e.type === 'turn.started' && resolve()),
        );
        const running = await queue.enqueueSend({
          agent: 'desk',
          sessionId: 'busy-1',
          key: 'm2',
          message: 'second',
          context,
        });
        await started;
        await expect(app.erase({ userId: USER }, { also: [queue] })).rejects.toMatchObject({
          code: 'SessionBusy',
          message: expect.stringContaining('send.busy-1.m2'),
        });
        expect(await store.load('busy-1')).toBeDefined();
        expect((await running.result).result.status).toBe('completed');
        expect((await app.erase({ userId: USER }, { also: [queue] })).sessions).toEqual(['busy-1']);
        expect(countOf(await redisText(redis, prefix), 'busy-1')).toBe(0);
      } finally {
        await queue.close();
        await worker.close().catch(() => undefined);
        const keys = await redis.keys(`${prefix}:*`);
        if (keys.length > 0) await redis.del(...keys);
        await redis.quit();
        await store.close();
      }
    });

    (pgUp ? it : it.skip)("on PostgreSQL (every table of the store's schema): 0 matches", async () => {
      const schemas = new PostgresSchemas();
      try {
        const schema = schemas.next();
        const store = await schemas.open(schema);
        const scan = async () => {
          const { rows } = await schemas.admin.query<{ tablename: string }>(
            'SELECT tablename FROM pg_tables WHERE schemaname = $1',
            [schema],
          );
          let text = '';
          for (const { tablename } of rows)
            text += (
              await schemas.admin.query<{ row: string }>(`SELECT t::text AS row FROM "${schema}"."${tablename}" t`)
            ).rows
              .map((r) => r.row)
              .join('\n');
          return text;
        };
        await eraseEverywhere({ store, scan, close: () => store.close() }, dir);
        await store.close();
      } finally {
        await schemas.dropAll();
      }
    });
  },
);
