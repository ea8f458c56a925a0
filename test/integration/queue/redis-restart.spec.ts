import { Redis } from 'ioredis';
import { TrellisError, type PostgresStore } from '../../../index.js';
import { jobIdOf, TurnQueue, type TurnJobResult } from '../../../queue.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { POSTGRES_URL, haveService } from '../../support/services.js';
import { sharedTranspiledProject } from '../../support/transpiled-tree.js';
import { PrivateRedis, ready, startChild, until, type Child } from './queue-children.js';
import { RedisHop } from './redis-hop.js';

const WHAT = 'callers of a Redis restarted without persistence';
const available = PrivateRedis.available(WHAT) && (await haveService('postgres', WHAT));
/** Resolves after `ms`; its timer does not keep the process up once the race it is in was won. */
const deadline = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms).unref());

/**
 * Issue 34: after restarts of a Redis without persistence, callers waited ≥ 600 s for turns
 * that had landed. A worker process (support/stall-worker.ts) on PostgreSQL and a private
 * `redis-server --save "" --appendonly no`, restarted here; the callers are this process's
 * TurnQueues, with the workers' store.
 */
(available ? describe : describe.skip)('a caller whose Redis restarted without persistence', () => {
  const schemas = new PostgresSchemas();
  const schema = schemas.next();
  const prefix = `trellis_rr${process.pid}_${Date.now().toString(36)}`;
  const redis = new PrivateRedis();
  const children: Child[] = [];
  let store: PostgresStore;
  let script: (relativePath: string) => string;

  beforeAll(async () => {
    script = sharedTranspiledProject();
    store = await schemas.open(schema);
    await schemas.admin.query(`
      CREATE TABLE "${schema}".tool_runs (id bigserial PRIMARY KEY, line text NOT NULL, tool text NOT NULL, key text NOT NULL, worker text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE TABLE "${schema}".gates (line text PRIMARY KEY);`);
    await redis.start();
  }, 120_000);

  afterAll(async () => {
    for (const child of children) child.process.kill('SIGKILL');
    await Promise.all(children.map((c) => c.exited));
    await store?.close();
    await schemas.dropAll();
    await redis.stop();
  });

  function worker(id: string, queuePrefix: string): Child {
    const child = startChild(script('test/support/stall-worker.ts'), id, {
      STALL_PG_URL: POSTGRES_URL,
      STALL_SCHEMA: schema,
      STALL_REDIS_URL: redis.url,
      STALL_PREFIX: queuePrefix,
      STALL_WORKER_ID: id,
    });
    children.push(child);
    return child;
  }

  const runs = async (line: string) =>
    (
      await schemas.admin.query<{ tool: string; n: number }>(
        `SELECT tool, COUNT(*)::int AS n FROM "${schema}".tool_runs WHERE line = $1 GROUP BY tool ORDER BY tool`,
        [line],
      )
    ).rows;

  it('gets the turns that landed while Redis was away from the store, known by their job ids', async () => {
    const queuePrefix = `${prefix}a`;
    const w = worker('w-a', queuePrefix);
    await ready(w);
    // The callers reach Redis through a hop, so their connections can stay away while the worker publishes.
    const hop = new RedisHop(new URL(redis.url));
    const hopPort = await hop.listen();
    const queue = new TurnQueue({
      url: `redis://127.0.0.1:${hopPort}`,
      prefix: queuePrefix,
      store,
      pollMs: 300,
      waitMs: 60_000,
    });
    let back: RedisHop | undefined;
    try {
      const lines = ['hold:a0', 'hold:a1', 'hold:a2'];
      const sent = lines.map((message, i) =>
        queue.send({ agent: 'staller', sessionId: `a${i}`, key: 'k0', message }).then(
          (value) => ({ value }),
          (error: unknown) => ({ error }),
        ),
      );
      // All three turns are inside their first tool.
      await until(
        'three turns mid-tool',
        async () =>
          (await schemas.admin.query(`SELECT 1 FROM "${schema}".tool_runs WHERE tool = 'stall.step'`)).rowCount === 3,
      );

      // Redis dies and comes back empty; the callers' connections (and so their subscriptions) stay cut.
      await hop.cut();
      await redis.restart();
      // What the worker publishes, heard on a connection of the test's own.
      const witness = new Redis(redis.url);
      const published: string[] = [];
      witness.on('message', (_channel: string, message: string) => published.push(message));
      await witness.subscribe(...lines.map((_, i) => `${queuePrefix}:turns:result:${jobIdOf('send', `a${i}`, 'k0')}`));
      try {
        await schemas.admin.query(`INSERT INTO "${schema}".gates (line) SELECT unnest($1::text[])`, [lines]);
        // The turns land in the store, and their results go out while no caller listens.
        await until(
          'three landed turns',
          async () =>
            (await schemas.admin.query(`SELECT 1 FROM "${schema}".turns WHERE session_id IN ('a0', 'a1', 'a2')`))
              .rowCount === 3,
        );
        await until('three published results', async () => published.length === 3);
      } finally {
        witness.disconnect();
      }
      expect(published.map((text) => (JSON.parse(text) as { ok: boolean }).ok)).toEqual([true, true, true]);

      // The callers' Redis is reachable again: no job, no message; each caller finds its turn in the store.
      back = new RedisHop(new URL(redis.url));
      await back.listen(hopPort);
      const outcomes = await Promise.race([Promise.all(sent), deadline(15_000).then(() => 'stranded' as const)]);
      expect(outcomes).not.toBe('stranded');
      for (const [i, outcome] of (outcomes as { value?: TurnJobResult; error?: unknown }[]).entries()) {
        expect(outcome.error).toBeUndefined();
        expect(outcome.value).toMatchObject({
          jobId: jobIdOf('send', `a${i}`, 'k0'),
          recovered: true,
          result: { status: 'completed', reply: `done: ${lines[i]}`, rounds: 3 },
        });
      }
      // Each turn ran once: each tool once, one turn record.
      for (const line of lines)
        expect(await runs(line)).toEqual([
          { tool: 'stall.effect', n: 1 },
          { tool: 'stall.step', n: 1 },
        ]);
    } finally {
      await queue.close();
      await back?.cut();
      await hop.cut();
    }
  }, 120_000);

  it('gives a caller whose job Redis lost before any worker took it QueuedTurnLost at its bound; the same key again runs the turn once', async () => {
    const queuePrefix = `${prefix}b`;
    const queue = new TurnQueue({ url: redis.url, prefix: queuePrefix, store, pollMs: 200 });
    try {
      const request = { agent: 'staller', sessionId: 'b0', key: 'k0', message: 'b0' };
      // No worker serves this queue yet: the job waits in Redis, which restarts empty.
      const queued = await queue.enqueueSend(request, { waitMs: 3_000 });
      const started = Date.now();
      await redis.restart();
      const error = await Promise.race([
        queued.result.then(
          () => 'a result',
          (e: unknown) => e,
        ),
        deadline(15_000).then(() => 'stranded'),
      ]);
      const waited = Date.now() - started;
      expect(TrellisError.is(error, 'QueuedTurnLost')).toBe(true);
      expect((error as TrellisError).retryable).toBe(true);
      expect((error as TrellisError).hint).toContain('same key (k0)');
      expect(waited).toBeGreaterThanOrEqual(2_500);
      expect(waited).toBeLessThan(8_000);
      expect(await runs('b0')).toEqual([]);

      // What the hint says: the same key again, now with a worker, runs the turn once.
      const w = worker('w-b', queuePrefix);
      await ready(w);
      const again = await queue.send(request, { waitMs: 30_000 });
      expect(again).toMatchObject({ recovered: false, result: { status: 'completed', reply: 'done: b0' } });
      expect(await runs('b0')).toEqual([
        { tool: 'stall.effect', n: 1 },
        { tool: 'stall.step', n: 1 },
      ]);
    } finally {
      await queue.close();
    }
  }, 120_000);

  it('refuses a wait bound that is not a whole number of milliseconds', () => {
    expect(() => new TurnQueue({ url: redis.url, waitMs: 0 })).toThrow(
      expect.objectContaining({ code: 'InvalidOptions' }),
    );
    expect(() => new TurnQueue({ url: redis.url, waitMs: Number.NaN })).toThrow(
      expect.objectContaining({ code: 'InvalidOptions' }),
    );
  });
});
