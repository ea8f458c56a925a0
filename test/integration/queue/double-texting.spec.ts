import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { PostgresStore, TrellisError } from '../../../index.js';
import { TurnQueue, type QueuedTurn } from '../../../queue.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { POSTGRES_URL, REDIS_URL, haveService } from '../../support/services.js';
import { sharedTranspiledProject } from '../../support/transpiled-tree.js';

const available =
  (await haveService('postgres', 'double-texting test')) && (await haveService('redis', 'double-texting test'));
const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

interface Child {
  readonly process: ChildProcess;
  readonly exited: Promise<number | null>;
  readonly stdout: string[];
}

interface Sent {
  readonly message: string;
  readonly began: number;
  readonly accepted: number;
  readonly status: string;
}

/**
 * Real processes: two worker processes (concurrency 8 each, the scale test's worker) on one
 * PostgreSQL schema and one Redis prefix; this process and enqueuer processes send, cancel and
 * read the store.
 */
(available ? describe : describe.skip)('double-texting and cancel across processes (PostgreSQL, Redis)', () => {
  const schemas = new PostgresSchemas();
  const schema = schemas.next();
  const prefix = `trellis_dt${process.pid}_${Date.now().toString(36)}`;
  const children: Child[] = [];
  let script: (relativePath: string) => string;
  let queue: TurnQueue;
  let store: PostgresStore;

  function start(file: string, env: Record<string, string>, name: string): Child {
    const child = spawn(process.execPath, ['--no-warnings', script(file)], {
      cwd: ROOT,
      env: {
        ...process.env,
        SCALE_PG_URL: POSTGRES_URL,
        SCALE_REDIS_URL: REDIS_URL,
        SCALE_SCHEMA: schema,
        SCALE_PREFIX: prefix,
        ...env,
      },
      stdio: ['pipe', 'pipe', 'pipe'],
    });
    const stdout: string[] = [];
    child.stdout.setEncoding('utf8').on('data', (text: string) => stdout.push(...text.split('\n').filter(Boolean)));
    child.stderr.setEncoding('utf8').on('data', (text: string) => process.stderr.write(`[${name}] ${text}`));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const entry = { process: child, exited, stdout };
    children.push(entry);
    return entry;
  }

  async function until(check: () => boolean | Promise<boolean>, what: string, ms = 30_000): Promise<void> {
    const deadline = Date.now() + ms;
    while (!(await check())) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  const ledger = async (like: string) =>
    (
      await schemas.admin.query(
        `SELECT line, extract(epoch from at) * 1000 AS at FROM "${schema}".tool_ledger WHERE line LIKE $1 ORDER BY id`,
        [like],
      )
    ).rows as { line: string; at: number }[];

  beforeAll(async () => {
    script = sharedTranspiledProject();
    await (await schemas.open(schema)).close();
    await schemas.admin.query(`
      CREATE TABLE "${schema}".tool_ledger (id bigserial PRIMARY KEY, line text NOT NULL, key text NOT NULL, worker text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE TABLE "${schema}".model_calls (id bigserial PRIMARY KEY, call text NOT NULL, worker text NOT NULL);`);
    const workers = ['w0', 'w1'].map((id) =>
      start('test/support/scale-worker.ts', { SCALE_WORKER_ID: id, SCALE_DELAY_MS: '20' }, id),
    );
    await until(() => workers.every((w) => w.stdout.includes('ready')), 'the workers', 60_000);
    queue = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'turns', pollMs: 500 });
    store = await PostgresStore.open({ url: POSTGRES_URL, schema, maxConnections: 2 });
  }, 120_000);

  afterAll(async () => {
    await queue?.close();
    await store?.close();
    for (const child of children) if (child.process.exitCode === null) child.process.kill('SIGTERM');
    await Promise.all(children.map((c) => c.exited));
    await schemas.dropAll();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }, 60_000);

  it('enqueue (the default): 3 enqueuing processes × 6 messages sent back to back to one session run strictly in the order they were accepted', async () => {
    const enqueuers = ['a', 'b', 'c'].map((id) =>
      start(
        'test/support/order-enqueuer.ts',
        { ORDER_ID: id, ORDER_COUNT: '6', ORDER_SESSION: 'order', ORDER_GAP_MS: '15' },
        `enqueuer-${id}`,
      ),
    );
    // Each process is started and connected before any sends, so the three send at once.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    for (const e of enqueuers) e.process.stdin!.write('go\n');
    expect(await Promise.all(enqueuers.map((e) => e.exited))).toEqual([0, 0, 0]);
    const sent = enqueuers.flatMap((e) => JSON.parse(e.stdout.at(-1)!) as Sent[]);
    expect(sent.map((s) => s.status)).toEqual(sent.map(() => 'completed'));
    const stored = await store.load('order');
    const ran = stored!.transcript.filter((m) => m.role === 'user').map((m) => m.content);
    expect([...ran].sort()).toEqual(sent.map((s) => s.message).sort());
    // Each instance's messages in its own order…
    for (const id of ['a', 'b', 'c'])
      expect(ran.filter((m) => m.startsWith(`${id}-`))).toEqual([0, 1, 2, 3, 4, 5].map((i) => `${id}-m${i}`));
    // …and across instances: a message accepted before another's send began ran before it.
    const position = new Map(ran.map((m, i) => [m, i]));
    for (const x of sent)
      for (const y of sent)
        if (x.accepted < y.began)
          expect([x.message, y.message, position.get(x.message)! < position.get(y.message)!]).toEqual([
            x.message,
            y.message,
            true,
          ]);
    // The tools ran in that order too, once each.
    expect((await ledger('%-m%')).map((r) => r.line)).toEqual(ran);
    process.stdout.write(
      `double-texting: ${ran.length} messages from 3 processes ran in accepted order: ${ran.join(' ')}\n`,
    );
  }, 120_000);

  it('reject: a send to a busy session is refused with SessionBusy before anything is queued; an idle one runs', async () => {
    const first = await queue.enqueueSend({
      agent: 'ledger-keeper',
      sessionId: 'reject',
      key: 'k0',
      message: 'wait:reject',
    });
    await until(async () => (await ledger('start:wait:reject')).length > 0, 'the first turn to run');
    const refused = await queue
      .enqueueSend({
        agent: 'ledger-keeper',
        sessionId: 'reject',
        key: 'k1',
        message: 'second',
        doubleTexting: 'reject',
      })
      .catch((error: unknown) => error);
    expect(TrellisError.is(refused, 'SessionBusy')).toBe(true);
    expect((refused as Error).message).toContain("doubleTexting: 'reject'");
    await queue.cancel('reject');
    expect((await first.result).result.status).toBe('cancelled');
    // Idle now: the same policy lets a send through.
    const third = await queue.send({
      agent: 'ledger-keeper',
      sessionId: 'reject',
      key: 'k2',
      message: 'third',
      doubleTexting: 'reject',
    });
    expect(third.result.status).toBe('completed');
    expect((await ledger('second')).length).toBe(0);
  }, 60_000);

  it('TurnQueue.cancel from another process stops the running turn on its worker within 100 ms: the tool sees its signal abort, the completed steps are kept', async () => {
    const running = await queue.enqueueSend({
      agent: 'ledger-keeper',
      sessionId: 'cancel',
      key: 'k0',
      message: 'wait:cancel',
    });
    await until(async () => (await ledger('start:wait:cancel')).length > 0, 'the tool to start');
    const asked = Date.now();
    const { jobId } = await queue.cancel('cancel');
    expect(jobId).toBe(running.jobId);
    const done = await running.result;
    const settled = Date.now() - asked;
    const [aborted] = await ledger('aborted:wait:cancel');
    const toAbort = aborted!.at - asked;
    process.stdout.write(
      `cancel: the tool saw its signal abort ${toAbort.toFixed(1)} ms after TurnQueue.cancel(); the result arrived after ${settled} ms\n`,
    );
    expect(toAbort).toBeLessThan(100);
    expect(done.result.status).toBe('cancelled');
    const stored = await store.load('cancel');
    expect(stored!.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect(stored!.transcript[2]!.content).toContain('recorded wait:cancel');
    expect(stored!.transcript[3]!.content).toContain('Cancelled');
    expect(stored!.turns.map((t) => t.status)).toEqual(['cancelled']);
    // Nothing is running now: a cancel finds nothing.
    expect((await queue.cancel('cancel')).jobId).toBeUndefined();
  }, 60_000);

  it('TurnQueue.cancel with keepSteps: false rolls the running turn back: nothing joins the transcript', async () => {
    await queue.send({ agent: 'ledger-keeper', sessionId: 'rollback-cancel', key: 'k0', message: 'before' });
    const running = await queue.enqueueSend({
      agent: 'ledger-keeper',
      sessionId: 'rollback-cancel',
      key: 'k1',
      message: 'wait:rollback-cancel',
    });
    await until(async () => (await ledger('start:wait:rollback-cancel')).length > 0, 'the tool to start');
    await queue.cancel('rollback-cancel', { keepSteps: false });
    expect((await running.result).result.status).toBe('cancelled');
    expect((await ledger('aborted:wait:rollback-cancel')).length).toBe(1);
    const stored = await store.load('rollback-cancel');
    expect(stored!.transcript.filter((m) => m.role === 'user').map((m) => m.content)).toEqual(['before']);
    expect(stored!.turns.map((t) => t.status)).toEqual(['completed', 'cancelled']);
  }, 60_000);

  it('interrupt: the running turn is cancelled keeping its completed steps, turns queued behind it do not run, and the new message runs', async () => {
    const running = await queue.enqueueSend({
      agent: 'ledger-keeper',
      sessionId: 'interrupt',
      key: 'k0',
      message: 'wait:interrupt',
    });
    await until(async () => (await ledger('start:wait:interrupt')).length > 0, 'the tool to start');
    const queued = await queue.enqueueSend({
      agent: 'ledger-keeper',
      sessionId: 'interrupt',
      key: 'k1',
      message: 'queued-interrupt',
    });
    const next = await queue.send({
      agent: 'ledger-keeper',
      sessionId: 'interrupt',
      key: 'k2',
      message: 'new-interrupt',
      doubleTexting: 'interrupt',
    });
    expect((await running.result).result.status).toBe('cancelled');
    expect((await queued.result).result).toMatchObject({ status: 'cancelled', rounds: 0 });
    expect(next.result.status).toBe('completed');
    const stored = await store.load('interrupt');
    expect(stored!.transcript.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'wait:interrupt',
      'new-interrupt',
    ]);
    expect(stored!.transcript.slice(0, 4).map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool']);
    expect((await ledger('queued-interrupt')).length).toBe(0);
  }, 60_000);

  it('rollback: the running turn is cancelled and its steps discarded; the new message runs', async () => {
    await queue.send({ agent: 'ledger-keeper', sessionId: 'rollback', key: 'k0', message: 'before-rollback' });
    const running = await queue.enqueueSend({
      agent: 'ledger-keeper',
      sessionId: 'rollback',
      key: 'k1',
      message: 'wait:rollback',
    });
    await until(async () => (await ledger('start:wait:rollback')).length > 0, 'the tool to start');
    const next = await queue.send({
      agent: 'ledger-keeper',
      sessionId: 'rollback',
      key: 'k2',
      message: 'new-rollback',
      doubleTexting: 'rollback',
    });
    expect((await running.result).result.status).toBe('cancelled');
    expect(next.result.status).toBe('completed');
    const stored = await store.load('rollback');
    expect(stored!.transcript.filter((m) => m.role === 'user').map((m) => m.content)).toEqual([
      'before-rollback',
      'new-rollback',
    ]);
    expect(stored!.transcript.some((m) => m.content.includes('wait:rollback'))).toBe(false);
  }, 60_000);

  it('a policy that is not one of the four is refused before anything is queued', async () => {
    const bad = await queue
      .enqueueSend({ agent: 'ledger-keeper', sessionId: 'x', key: 'k', message: 'm', doubleTexting: 'later' as never })
      .catch((error: unknown) => error);
    expect(TrellisError.is(bad, 'InvalidOptions')).toBe(true);
    expect(() => new TurnQueue({ url: REDIS_URL, doubleTexting: { 'ledger-keeper': 'sometimes' as never } })).toThrow(
      /enqueue/,
    );
  });
});

export type { QueuedTurn };
