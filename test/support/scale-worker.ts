/**
 * A worker process of the multi-process scale test (run as transpiled JavaScript):
 * a TrellisWorker over the shared PostgreSQL store and Redis queue, whose tool appends every
 * run to the `tool_ledger` table (with its idempotency key) and whose model counts every call
 * it answers in `model_calls`. With SCALE_KILL_AFTER=n it SIGKILLs itself right after its n-th
 * tool run — mid-turn, after the side effect, before its result is journalled; with
 * SCALE_KILL_AFTER_WRITE=n right after its n-th journal write landed, before its turn hears of
 * it. With SCALE_SNAPSHOT=1 it first records the journal's view at that instant
 * (scale-snapshot.ts, run with this process's event loop blocked), so the test can tell a call
 * in doubt at the death from one that had finished. With SCALE_HOLD_TOOLS=1 every tool run
 * waits after its side effect until the process dies, so SCALE_KILL_AFTER=n kills it with n
 * calls in flight at once. With SCALE_POISON=1 a line starting `crash:` SIGKILLs the worker
 * inside its tool run, every time (a poison turn; a worker without it runs such a line). SCALE_LEASE_TTL_MS, SCALE_LOCK_MS, SCALE_MAX_CRASHES and
 * SCALE_CONCURRENCY set the worker's options of those names.
 */
import 'reflect-metadata';
import { spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import pg from 'pg';
import { PostgresStore, type SessionStore } from '../../index.js';
import { TrellisWorker } from '../../queue.js';
import { createQueueApp } from './queue-app.js';

const env = (name: string) =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is not set`);
  })();
const schema = env('SCALE_SCHEMA');
const id = env('SCALE_WORKER_ID');
const killAfter = Number(process.env.SCALE_KILL_AFTER ?? 0);
const killAfterWrite = Number(process.env.SCALE_KILL_AFTER_WRITE ?? 0);
const holdTools = process.env.SCALE_HOLD_TOOLS === '1';
const poison = process.env.SCALE_POISON === '1';
const optional = (name: string) => (process.env[name] === undefined ? undefined : Number(process.env[name]));

/** Dies at once: nothing after this line of the process runs, and no write of it lands after the snapshot. */
function die(why: string): void {
  process.stderr.write(`${id} kills itself ${why}\n`);
  if (process.env.SCALE_SNAPSHOT === '1') {
    const taken = spawnSync(
      process.execPath,
      ['--no-warnings', fileURLToPath(new URL('./scale-snapshot.js', import.meta.url))],
      { env: process.env, stdio: ['ignore', 'inherit', 'inherit'], timeout: 60_000 },
    );
    if (taken.status !== 0)
      process.stderr.write(`${id}: the journal snapshot failed (${taken.status ?? taken.signal})\n`);
  }
  process.kill(process.pid, 'SIGKILL');
}

/** The store, with the process killed right after its `killAfterWrite`-th journal write landed. */
function killing(real: SessionStore): SessionStore {
  if (killAfterWrite === 0) return real;
  let writes = 0;
  return new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = (value as (...args: unknown[]) => unknown).bind(target);
      if (prop !== 'appendSteps') return method;
      return async (...args: unknown[]) => {
        const out = await method(...args);
        if (++writes === killAfterWrite) die(`after journal write ${writes}`);
        return out;
      };
    },
  });
}

const store = killing(await PostgresStore.open({ url: env('SCALE_PG_URL'), schema, maxConnections: 6 }));
const ledgerPool = new pg.Pool({ connectionString: env('SCALE_PG_URL'), max: 3 });
let runs = 0;
const host = createQueueApp(
  store,
  async (line, key) => {
    await ledgerPool.query(`INSERT INTO "${schema}".tool_ledger (line, key, worker) VALUES ($1, $2, $3)`, [
      line,
      key,
      id,
    ]);
    runs++;
    if (poison && line.startsWith('crash:')) die(`inside a poison call (${line})`);
    if (killAfter > 0 && runs === killAfter) die(`after tool run ${runs} (${line})`);
    if (holdTools) await new Promise(() => undefined);
  },
  Number(process.env.SCALE_DELAY_MS ?? 20),
  {
    onModelCall: async (call) => {
      await ledgerPool.query(`INSERT INTO "${schema}".model_calls (call, worker) VALUES ($1, $2)`, [call, id]);
    },
  },
);
await host.install();
const agent = host.agent();
const worker = new TrellisWorker({
  url: env('SCALE_REDIS_URL'),
  prefix: env('SCALE_PREFIX'),
  queueName: 'turns',
  store,
  agent: () => agent,
  id,
  concurrency: Number(process.env.SCALE_CONCURRENCY ?? 8),
  // The defaults: a dead worker's jobs are put back after the job lock (5 s) and run once its
  // leases lapse (10 s, the queue's and the kernel's, which the worker sets for its turns).
  busyDelayMs: 300,
  ...(optional('SCALE_LEASE_TTL_MS') !== undefined && { leaseTtlMs: optional('SCALE_LEASE_TTL_MS') }),
  ...(optional('SCALE_LOCK_MS') !== undefined && { lockDurationMs: optional('SCALE_LOCK_MS') }),
  ...(optional('SCALE_MAX_CRASHES') !== undefined && { maxCrashes: optional('SCALE_MAX_CRASHES') }),
});
await worker.start();
process.stdout.write('ready\n');

process.once('SIGTERM', () => {
  void (async () => {
    await worker.close();
    await host.app.stop();
    await ledgerPool.end();
    process.exit(0);
  })();
});
