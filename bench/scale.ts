/**
 * `npm run bench:scale`: the figures of issue 11. Turns per second and enqueue → completion
 * latency (p50, p99) through TurnQueue with 1, 2 and 4 worker processes on PostgreSQL and
 * Redis, the model waiting a fixed 20 ms per call; then the cost of one checkpoint on
 * PostgreSQL beside SQLite. Prints a table and writes bench/results/scale-<timestamp>.json.
 * Options: `--turns N` (per worker count, default 600), `--workers 1,2,4`.
 * Servers: TRELLIS_PG_URL (default postgres://postgres@127.0.0.1:5432/test) and
 * TRELLIS_REDIS_URL (default redis://127.0.0.1:6379); everything made is removed after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import pg from 'pg';
import { PostgresStore, SqliteStore, type SessionStore } from '../index.js';
import { TurnQueue } from '../queue.js';
import { quantile, round } from './stats.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback);
const TURNS = Number(option('--turns', '600'));
const WORKERS = option('--workers', '1,2,4').split(',').map(Number);
const LATENCY_MS = 20;
const CONCURRENCY = 8;
const IN_FLIGHT = 64;
const PG_URL = process.env.TRELLIS_PG_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
const REDIS_URL = process.env.TRELLIS_REDIS_URL ?? 'redis://127.0.0.1:6379';
const here = dirname(fileURLToPath(import.meta.url));
const tag = `trellis_bench_${process.pid}_${Date.now().toString(36)}`;

interface QueueFigures {
  readonly workers: number;
  readonly turns: number;
  readonly turnsPerSecond: number;
  readonly latencyMs: { readonly p50: number; readonly p99: number };
}

async function queueFigures(workers: number, schema: string): Promise<QueueFigures> {
  const prefix = `${tag}_w${workers}`;
  const children = await Promise.all(Array.from({ length: workers }, () => startWorker(schema, prefix)));
  const queue = new TurnQueue({ url: REDIS_URL, prefix, pollMs: 1000 });
  const latencies: number[] = [];
  let next = 0;
  const started = performance.now();
  await Promise.all(
    Array.from({ length: IN_FLIGHT }, async () => {
      // Each "user" sends the next message after the reply, as a chat does.
      for (let i = next++; i < TURNS; i = next++) {
        const t0 = performance.now();
        await queue.send({ agent: 'bench', sessionId: `w${workers}-s${i % (TURNS / 3)}`, key: `t${i}`, message: `m${i}` });
        latencies.push(performance.now() - t0);
      }
    }),
  );
  const seconds = (performance.now() - started) / 1000;
  await queue.close();
  for (const child of children) child.kill('SIGTERM');
  await Promise.all(children.map((c) => new Promise((resolve) => c.once('exit', resolve))));
  const redis = new Redis(REDIS_URL);
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  const sorted = latencies.sort((a, b) => a - b);
  return { workers, turns: TURNS, turnsPerSecond: round(TURNS / seconds, 1), latencyMs: { p50: round(quantile(sorted, 0.5), 1), p99: round(quantile(sorted, 0.99), 1) } };
}

function startWorker(schema: string, prefix: string): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(here, 'scale-worker.js'), PG_URL, schema, REDIS_URL, prefix, String(LATENCY_MS), String(CONCURRENCY)], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.stdout!.on('data', (text: Buffer) => text.toString().includes('ready') && resolve(child));
    child.once('exit', (code) => reject(new Error(`a bench worker exited with ${code} before it was ready`)));
  });
}

/** Microseconds per checkpoint (a 4-message turn on a growing session), p50 and p99. */
async function checkpointCost(store: SessionStore, n = 400): Promise<{ p50: number; p99: number }> {
  const times: number[] = [];
  for (let i = 0; i < n; i++) {
    const t0 = performance.now();
    await store.checkpoint({
      sessionId: `c${i % 20}`,
      agent: 'bench',
      expectedRevision: Math.floor(i / 20),
      state: { 'memory.turns': i },
      append: [
        { role: 'user', content: `question ${i}` },
        { role: 'assistant', content: `answer ${i}`.repeat(20) },
      ],
      turn: { index: Math.floor(i / 20), input: `question ${i}`, status: 'completed', reply: 'ok', rounds: 1, toolCalls: 0, usage: {}, startedAt: new Date().toISOString(), endedAt: new Date().toISOString() },
      suspension: null,
    });
    times.push((performance.now() - t0) * 1000);
  }
  const sorted = times.sort((a, b) => a - b);
  return { p50: Math.round(quantile(sorted, 0.5)), p99: Math.round(quantile(sorted, 0.99)) };
}

const schema = tag;
const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
const sqliteDir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
try {
  await (await PostgresStore.open({ url: PG_URL, schema })).close();
  const queueRuns: QueueFigures[] = [];
  for (const workers of WORKERS) {
    queueRuns.push(await queueFigures(workers, schema));
    console.log(`queue: ${workers} worker(s): ${JSON.stringify(queueRuns.at(-1))}`);
  }
  const postgres = await PostgresStore.open({ url: PG_URL, schema: `${schema}_cp` });
  const sqlite = SqliteStore.open(join(sqliteDir, 'bench.db'));
  const checkpoints = { postgresUs: await checkpointCost(postgres), sqliteUs: await checkpointCost(sqlite) };
  await postgres.close();
  await sqlite.close();
  const report = { date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg().map((l) => round(l, 1)) }, modelLatencyMs: LATENCY_MS, workerConcurrency: CONCURRENCY, inFlight: IN_FLIGHT, queue: queueRuns, checkpoints };
  console.log('\nworkers  turns/s  p50 ms  p99 ms');
  for (const r of queueRuns) console.log(`${String(r.workers).padStart(7)}  ${String(r.turnsPerSecond).padStart(7)}  ${String(r.latencyMs.p50).padStart(6)}  ${String(r.latencyMs.p99).padStart(6)}`);
  console.log(`checkpoint µs p50/p99: PostgreSQL ${checkpoints.postgresUs.p50}/${checkpoints.postgresUs.p99}, SQLite ${checkpoints.sqliteUs.p50}/${checkpoints.sqliteUs.p99}`);
  const out = join(here, '..', '..', 'bench', 'results', `scale-${report.date.replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`written ${out}`);
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_cp" CASCADE`);
  await admin.end();
  rmSync(sqliteDir, { recursive: true, force: true });
}
