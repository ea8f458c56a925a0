/**
 * `npm run bench:scale`: the figures of issue 11. Turns per second and enqueue → completion
 * latency (p50, p99) through TurnQueue with 1, 2 and 4 worker processes on PostgreSQL and
 * Redis, the model waiting a fixed 20 ms per call; then the cost of one checkpoint on
 * PostgreSQL beside SQLite. Prints a table and writes bench/results/scale-<timestamp>.json.
 * Options: `--turns N` (per worker count, default 600), `--workers 1,2,4` (`--workers ''`:
 * the targets only), `--target-turns N` (per turn shape for the targets, default 150).
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
import { checkpointRatio } from './pg-checkpoint-ratio.js';
import { Trellis } from '../index.js';
import { BenchToolsPlugin, benchAgent } from './bench-agent.js';

const args = process.argv.slice(2);
const option = (name: string, fallback: string) => (args.includes(name) ? args[args.indexOf(name) + 1]! : fallback);
const TURNS = Number(option('--turns', '600'));
const WORKERS = option('--workers', '1,2,4').split(',').filter((w) => w !== '').map(Number);
const TARGET_TURNS = Number(option('--target-turns', '150'));
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

function startWorker(schema: string, prefix: string, latencyMs = LATENCY_MS): Promise<ChildProcess> {
  const child = spawn(process.execPath, [join(here, 'scale-worker.js'), PG_URL, schema, REDIS_URL, prefix, String(latencyMs), String(CONCURRENCY)], { stdio: ['ignore', 'pipe', 'inherit'] });
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

/** Sum of `calls` over every command Redis counted so far (INFO commandstats: scripted commands included). */
async function redisCalls(redis: Redis): Promise<number> {
  const info = await redis.info('commandstats');
  return [...info.matchAll(/calls=(\d+)/g)].reduce((sum, m) => sum + Number(m[1]), 0);
}

interface Target {
  readonly name: string;
  readonly value: number;
  readonly limit: number;
  readonly unit: string;
}

/** Milliseconds of `turns` sequential turns of `send`, after `warm` unmeasured ones. */
async function timed(turns: number, warm: number, send: (i: number) => Promise<unknown>): Promise<number[]> {
  for (let i = 0; i < warm; i++) await send(-1 - i);
  const times: number[] = [];
  for (let i = 0; i < turns; i++) {
    const t0 = performance.now();
    await send(i);
    times.push(performance.now() - t0);
  }
  return times;
}

/** Tool rounds of the two turn shapes the targets are measured on. */
const SHAPES = [0, 3] as const;

/**
 * The targets of issue 26, measured in this run: a 0-round and a 3-round turn (the model
 * answers at once) queued (one worker, nobody streaming) against the same turn in process on
 * the same PostgreSQL server, sequentially, the two measured in alternating blocks so that a
 * neighbour's load falls on both alike; Redis commands per queued turn; one checkpoint
 * against one single-row INSERT on the same connection.
 */
async function targets(schema: string, turns: number): Promise<{ targets: Target[]; figures: Record<string, unknown> }> {
  const store = await PostgresStore.open({ url: PG_URL, schema: `${schema}_ip`, maxConnections: 8 });
  const app = Trellis.create({ store });
  await app.install(BenchToolsPlugin);
  const agent = app.agent(benchAgent(0));
  const prefix = `${tag}_targets`;
  const child = await startWorker(schema, prefix, 0);
  const queue = new TurnQueue({ url: REDIS_URL, prefix, pollMs: 2000 });
  const redis = new Redis(REDIS_URL);
  const sessions = 10;
  const inProcess: Record<number, number[]> = { 0: [], 3: [] };
  const queued: Record<number, number[]> = { 0: [], 3: [] };
  let commands = 0;
  let queuedTurns = 0;
  const blocks = 5;
  const per = Math.max(1, Math.floor(turns / blocks));
  for (let block = 0; block < blocks; block++) {
    for (const shape of SHAPES) {
      const text = (i: number) => (shape === 0 ? `m${i}` : `r${shape}:m${i}`);
      inProcess[shape]!.push(...(await timed(per, block === 0 ? 10 : 0, (i) => agent.session(`ip${shape}-${(i + sessions) % sessions}`).send(text(i)))));
      await timed(0, block === 0 ? 10 : 0, (i) => queue.send({ agent: 'bench', sessionId: `warm${shape}-${i}`, key: 'w', message: text(i) }));
      // INFO itself is one call; the window also holds the worker's own polling while the turns ran.
      const before = await redisCalls(redis);
      queued[shape]!.push(...(await timed(per, 0, (i) => queue.send({ agent: 'bench', sessionId: `q${shape}-${i % sessions}`, key: `b${block}t${i}`, message: text(i) }))));
      if (shape === 0) {
        commands += (await redisCalls(redis)) - before - 1;
        queuedTurns += per;
      }
    }
  }
  await app.stop();
  await queue.close();
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  const q = (xs: number[], p: number) => quantile([...xs].sort((a, b) => a - b), p);
  const ratio = await checkpointRatio(PG_URL, `${schema}_ratio`);
  const perShape = (shape: number) => ({ inProcessMs: { p50: round(q(inProcess[shape]!, 0.5)), p99: round(q(inProcess[shape]!, 0.99)) }, queuedMs: { p50: round(q(queued[shape]!, 0.5)), p99: round(q(queued[shape]!, 0.99)) } });
  const figures = { turnsPerShape: per * blocks, rounds0: perShape(0), rounds3: perShape(3), redisCommandsPerTurn: round(commands / queuedTurns, 1), checkpoint: ratio };
  const gap = (shape: number, p: number) => round(q(queued[shape]!, p) - q(inProcess[shape]!, p));
  return {
    figures,
    targets: [
      ...SHAPES.flatMap((shape) => [
        { name: `queued - in process, ${shape}-round turn, p50`, value: gap(shape, 0.5), limit: 2, unit: 'ms' },
        { name: `queued - in process, ${shape}-round turn, p99`, value: gap(shape, 0.99), limit: 10, unit: 'ms' },
      ]),
      { name: 'checkpoint / single-row INSERT+COMMIT, p50', value: ratio.ratio, limit: 1.5, unit: 'x' },
      { name: 'Redis commands per queued 0-round turn, nobody streaming', value: round(commands / queuedTurns, 1), limit: 20, unit: '' },
    ],
  };
}

const schema = tag;
const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
const sqliteDir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
try {
  await (await PostgresStore.open({ url: PG_URL, schema })).close();
  const measured = await targets(schema, TARGET_TURNS);
  console.log(`targets (${JSON.stringify(measured.figures)}):`);
  for (const t of measured.targets) console.log(`  ${t.value <= t.limit ? 'met    ' : 'NOT met'}  ${t.name}: ${t.value}${t.unit} (target <= ${t.limit}${t.unit})`);
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
  const report = { date: new Date().toISOString(), machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg().map((l) => round(l, 1)) }, modelLatencyMs: LATENCY_MS, workerConcurrency: CONCURRENCY, inFlight: IN_FLIGHT, queue: queueRuns, checkpoints, targets: measured };
  console.log('\nworkers  turns/s  p50 ms  p99 ms');
  for (const r of queueRuns) console.log(`${String(r.workers).padStart(7)}  ${String(r.turnsPerSecond).padStart(7)}  ${String(r.latencyMs.p50).padStart(6)}  ${String(r.latencyMs.p99).padStart(6)}`);
  console.log(`checkpoint µs p50/p99: PostgreSQL ${checkpoints.postgresUs.p50}/${checkpoints.postgresUs.p99}, SQLite ${checkpoints.sqliteUs.p50}/${checkpoints.sqliteUs.p99}`);
  const out = join(here, '..', '..', 'bench', 'results', `scale-${report.date.replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`written ${out}`);
} finally {
  await admin.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_cp" CASCADE; DROP SCHEMA IF EXISTS "${schema}_ip" CASCADE; DROP SCHEMA IF EXISTS "${schema}_ratio" CASCADE`);
  await admin.end();
  rmSync(sqliteDir, { recursive: true, force: true });
}
