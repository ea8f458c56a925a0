/**
 * `npm run bench:scale`: the figures of issues 11 and 26. First the targets of issue 26 (met /
 * not met, see docs/scaling.md), then turns per second and enqueue → completion
 * latency (p50, p99) through TurnQueue with 1, 2 and 4 worker processes on PostgreSQL and
 * Redis, the model waiting a fixed 20 ms per call; then the cost of one checkpoint on
 * PostgreSQL beside SQLite. Prints a table and writes bench/results/scale-<timestamp>.json.
 * Options: `--turns N` (per worker count, default 600), `--workers 1,2,4` (`--workers ''`:
 * the targets only), `--target-turns N` (per turn shape for the targets, default 150),
 * `--no-rows` (skip the rows-read-per-turn figure, which waits for PostgreSQL's statistics).
 * Servers: TRELLIS_PG_URL (default postgres://postgres@127.0.0.1:5432/test) and
 * TRELLIS_REDIS_URL (default redis://127.0.0.1:6379); everything made is removed after.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { cpus, loadavg, tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { connect } from 'node:net';
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
const WORKERS = option('--workers', '1,2,4')
  .split(',')
  .filter((w) => w !== '')
  .map(Number);
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
        await queue.send({
          agent: 'bench',
          sessionId: `w${workers}-s${i % (TURNS / 3)}`,
          key: `t${i}`,
          message: `m${i}`,
        });
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
  return {
    workers,
    turns: TURNS,
    turnsPerSecond: round(TURNS / seconds, 1),
    latencyMs: { p50: round(quantile(sorted, 0.5), 1), p99: round(quantile(sorted, 0.99), 1) },
  };
}

function startWorker(schema: string, prefix: string, latencyMs = LATENCY_MS): Promise<ChildProcess> {
  const child = spawn(
    process.execPath,
    [join(here, 'scale-worker.js'), PG_URL, schema, REDIS_URL, prefix, String(latencyMs), String(CONCURRENCY)],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  return new Promise((resolve, reject) => {
    child.stdout.on('data', (text: Buffer) => text.toString().includes('ready') && resolve(child));
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
      turn: {
        index: Math.floor(i / 20),
        input: `question ${i}`,
        status: 'completed',
        reply: 'ok',
        rounds: 1,
        toolCalls: 0,
        usage: {},
        startedAt: new Date().toISOString(),
        endedAt: new Date().toISOString(),
      },
      suspension: null,
    });
    times.push((performance.now() - t0) * 1000);
  }
  const sorted = times.sort((a, b) => a - b);
  return { p50: Math.round(quantile(sorted, 0.5)), p99: Math.round(quantile(sorted, 0.99)) };
}

/**
 * The Redis commands that name `prefix` while `work` runs, seen by `MONITOR` on a raw
 * connection (so other clients of a shared Redis are not counted): `all` counts the
 * commands run inside scripts too (as INFO commandstats would), `sent` only those the
 * clients sent (round trips).
 */
async function redisCommands(prefix: string, work: () => Promise<void>): Promise<{ all: number; sent: number }> {
  const url = new URL(REDIS_URL);
  const socket = connect({ host: url.hostname, port: Number(url.port || 6379) });
  let text = '';
  socket.setEncoding('utf8');
  socket.on('data', (chunk: string) => (text += chunk));
  await new Promise<void>((resolve, reject) => socket.once('connect', resolve).once('error', reject));
  socket.write('MONITOR\r\n');
  while (!text.startsWith('+OK')) await new Promise((resolve) => setTimeout(resolve, 10));
  text = '';
  await work();
  // What Redis ran by now has been sent to the monitor; give it a moment to arrive.
  await new Promise((resolve) => setTimeout(resolve, 200));
  socket.destroy();
  const lines = text.split('\r\n').filter((line) => line.includes(`"${prefix}:`));
  return { all: lines.length, sent: lines.filter((line) => !line.includes(' lua] ')).length };
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
async function targets(
  schema: string,
  turns: number,
): Promise<{ targets: Target[]; figures: Record<string, unknown> }> {
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
  const blocks = 5;
  const per = Math.max(1, Math.floor(turns / blocks));
  for (let block = 0; block < blocks; block++) {
    for (const shape of SHAPES) {
      const text = (i: number) => (shape === 0 ? `m${i}` : `r${shape}:m${i}`);
      inProcess[shape]!.push(
        ...(await timed(per, block === 0 ? 10 : 0, (i) =>
          agent.session(`ip${shape}-${(i + sessions) % sessions}`).send(text(i)),
        )),
      );
      await timed(0, block === 0 ? 10 : 0, (i) =>
        queue.send({ agent: 'bench', sessionId: `warm${shape}-${i}`, key: 'w', message: text(i) }),
      );
      queued[shape]!.push(
        ...(await timed(per, 0, (i) =>
          queue.send({
            agent: 'bench',
            sessionId: `q${shape}-${i % sessions}`,
            key: `b${block}t${i}`,
            message: text(i),
          }),
        )),
      );
    }
  }
  // Counted apart from the timed turns (MONITOR slows Redis down); the worker's own polling meanwhile is counted too.
  const counted = 20;
  const commands = await redisCommands(prefix, async () => {
    for (let i = 0; i < counted; i++)
      await queue.send({ agent: 'bench', sessionId: `c${i % sessions}`, key: `c${i}`, message: `m${i}` });
  });
  await app.stop();
  await queue.close();
  child.kill('SIGTERM');
  await new Promise((resolve) => child.once('exit', resolve));
  const keys = await redis.keys(`${prefix}:*`);
  if (keys.length > 0) await redis.del(...keys);
  await redis.quit();
  const q = (xs: number[], p: number) =>
    quantile(
      [...xs].sort((a, b) => a - b),
      p,
    );
  const ratio = await checkpointRatio(PG_URL, `${schema}_ratio`);
  const perShape = (shape: number) => ({
    inProcessMs: { p50: round(q(inProcess[shape]!, 0.5)), p99: round(q(inProcess[shape]!, 0.99)) },
    queuedMs: { p50: round(q(queued[shape]!, 0.5)), p99: round(q(queued[shape]!, 0.99)) },
  });
  const redisPerTurn = { all: round(commands.all / counted, 1), sent: round(commands.sent / counted, 1) };
  const figures = {
    turnsPerShape: per * blocks,
    rounds0: perShape(0),
    rounds3: perShape(3),
    redisCommandsPerTurn: redisPerTurn,
    checkpoint: ratio,
  };
  const gap = (shape: number, p: number) => round(q(queued[shape]!, p) - q(inProcess[shape]!, p));
  return {
    figures,
    targets: [
      ...SHAPES.flatMap((shape) => [
        { name: `queued - in process, ${shape}-round turn, p50`, value: gap(shape, 0.5), limit: 2, unit: 'ms' },
        { name: `queued - in process, ${shape}-round turn, p99`, value: gap(shape, 0.99), limit: 10, unit: 'ms' },
      ]),
      { name: 'checkpoint / single-row INSERT+COMMIT, p50', value: ratio.ratio, limit: 1.5, unit: 'x' },
      {
        name: 'Redis commands per queued 0-round turn, nobody streaming (inside scripts counted)',
        value: redisPerTurn.all,
        limit: 20,
        unit: '',
      },
    ],
  };
}

/** Rows PostgreSQL read in `schema`'s tables so far (sequential and index fetches), once the backends flushed their counts. */
async function rowsReadIn(admin: pg.Pool, schema: string): Promise<number> {
  // A backend reports its counts when idle, at most every 10 s.
  await new Promise((resolve) => setTimeout(resolve, 11_000));
  const { rows } = await admin.query<{ n: string }>(
    'SELECT COALESCE(SUM(seq_tup_read + COALESCE(idx_tup_fetch, 0)), 0) AS n FROM pg_stat_user_tables WHERE schemaname = $1',
    [schema],
  );
  return Number(rows[0]!.n);
}

/**
 * Rows read per queued turn early in a session's life (turns 2–11) and late (turns 41–50),
 * with 1 and with 2 workers (whose turns of a session then hop between workers at random,
 * each catching its copy up: the rows the other worker added since), 4 sessions side by
 * side, a 0-round turn each time.
 */
async function rowsPerTurn(admin: pg.Pool, schema: string): Promise<Record<string, { early: number; late: number }>> {
  const out: Record<string, { early: number; late: number }> = {};
  for (const workers of [1, 2]) {
    const rowsSchema = `${schema}_rows${workers}`;
    await (await PostgresStore.open({ url: PG_URL, schema: rowsSchema })).close();
    const prefix = `${tag}_rows${workers}`;
    const children = await Promise.all(Array.from({ length: workers }, () => startWorker(rowsSchema, prefix, 0)));
    const queue = new TurnQueue({ url: REDIS_URL, prefix, pollMs: 2000 });
    const sessions = 4;
    const round = async (r: number) => {
      for (let s = 0; s < sessions; s++)
        await queue.send({ agent: 'bench', sessionId: `s${s}`, key: `r${r}`, message: `m${r}` });
    };
    const measure = async (from: number, to: number) => {
      const before = await rowsReadIn(admin, rowsSchema);
      for (let r = from; r < to; r++) await round(r);
      return (await rowsReadIn(admin, rowsSchema)) - before;
    };
    await round(0);
    const early = await measure(1, 11);
    for (let r = 11; r < 40; r++) await round(r);
    const late = await measure(40, 50);
    out[`workers${workers}`] = {
      early: Math.round((early / (10 * sessions)) * 10) / 10,
      late: Math.round((late / (10 * sessions)) * 10) / 10,
    };
    await queue.close();
    for (const child of children) child.kill('SIGTERM');
    await Promise.all(children.map((c) => new Promise((resolve) => c.once('exit', resolve))));
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
    await admin.query(`DROP SCHEMA IF EXISTS "${rowsSchema}" CASCADE`);
  }
  return out;
}

const schema = tag;
const admin = new pg.Pool({ connectionString: PG_URL, max: 1 });
const sqliteDir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
try {
  await (await PostgresStore.open({ url: PG_URL, schema })).close();
  const measured = await targets(schema, TARGET_TURNS);
  if (!args.includes('--no-rows')) {
    const rows = await rowsPerTurn(admin, schema);
    measured.figures['rowsReadPerTurn'] = rows;
    // Flat: a whole reload per turn (as before delta reads) reads the session's 80–100 messages late on, several times the early rows.
    const growth = Math.max(...Object.values(rows).map((r) => r.late / r.early));
    measured.targets.push({
      name: 'rows read per queued turn, turns 41-50 / turns 2-11 (worst of 1 and 2 workers)',
      value: round(growth, 2),
      limit: 1.5,
      unit: 'x',
    });
    measured.targets.push({
      name: 'rows read per queued turn, 2 workers / 1 worker (turns 2-11)',
      value: round(rows['workers2']!.early / rows['workers1']!.early, 2),
      limit: 1.5,
      unit: 'x',
    });
  }
  console.log(`targets (${JSON.stringify(measured.figures)}):`);
  for (const t of measured.targets)
    console.log(
      `  ${t.value <= t.limit ? 'met    ' : 'NOT met'}  ${t.name}: ${t.value}${t.unit} (target <= ${t.limit}${t.unit})`,
    );
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
  const report = {
    date: new Date().toISOString(),
    machine: { cpus: cpus().length, model: cpus()[0]?.model, loadavg: loadavg().map((l) => round(l, 1)) },
    modelLatencyMs: LATENCY_MS,
    workerConcurrency: CONCURRENCY,
    inFlight: IN_FLIGHT,
    queue: queueRuns,
    checkpoints,
    targets: measured,
  };
  console.log('\nworkers  turns/s  p50 ms  p99 ms');
  for (const r of queueRuns)
    console.log(
      `${String(r.workers).padStart(7)}  ${String(r.turnsPerSecond).padStart(7)}  ${String(r.latencyMs.p50).padStart(6)}  ${String(r.latencyMs.p99).padStart(6)}`,
    );
  console.log(
    `checkpoint µs p50/p99: PostgreSQL ${checkpoints.postgresUs.p50}/${checkpoints.postgresUs.p99}, SQLite ${checkpoints.sqliteUs.p50}/${checkpoints.sqliteUs.p99}`,
  );
  const out = join(here, '..', '..', 'bench', 'results', `scale-${report.date.replace(/[:.]/g, '-')}.json`);
  mkdirSync(dirname(out), { recursive: true });
  writeFileSync(out, `${JSON.stringify(report, null, 2)}\n`);
  console.log(`written ${out}`);
} finally {
  await admin.query(
    `DROP SCHEMA IF EXISTS "${schema}" CASCADE; DROP SCHEMA IF EXISTS "${schema}_cp" CASCADE; DROP SCHEMA IF EXISTS "${schema}_ip" CASCADE; DROP SCHEMA IF EXISTS "${schema}_ratio" CASCADE`,
  );
  await admin.end();
  rmSync(sqliteDir, { recursive: true, force: true });
}
