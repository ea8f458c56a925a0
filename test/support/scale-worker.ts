/**
 * A worker process of the multi-process scale test (run as transpiled JavaScript):
 * a TrellisWorker over the shared PostgreSQL store and Redis queue, whose tool appends every
 * run to the `tool_ledger` table (with its idempotency key) and whose model counts every call
 * it answers in `model_calls`. With SCALE_KILL_AFTER=n it SIGKILLs itself right after its n-th
 * tool run — mid-turn, after the side effect, before its result is journalled.
 */
import 'reflect-metadata';
import pg from 'pg';
import { PostgresStore } from '../../index.js';
import { TrellisWorker } from '../../queue.js';
import { createQueueApp } from './queue-app.js';

const env = (name: string) => process.env[name] ?? (() => { throw new Error(`${name} is not set`); })();
const schema = env('SCALE_SCHEMA');
const id = env('SCALE_WORKER_ID');
const killAfter = Number(process.env.SCALE_KILL_AFTER ?? 0);

const store = await PostgresStore.open({ url: env('SCALE_PG_URL'), schema, maxConnections: 6 });
const ledgerPool = new pg.Pool({ connectionString: env('SCALE_PG_URL'), max: 3 });
let runs = 0;
const host = createQueueApp(
  store,
  async (line, key) => {
    await ledgerPool.query(`INSERT INTO "${schema}".tool_ledger (line, key, worker) VALUES ($1, $2, $3)`, [line, key, id]);
    runs++;
    if (killAfter > 0 && runs === killAfter) {
      process.stderr.write(`${id} kills itself after tool run ${runs} (${line})\n`);
      process.kill(process.pid, 'SIGKILL');
    }
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
