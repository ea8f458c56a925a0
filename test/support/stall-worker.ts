/**
 * A worker process of the queue tests where Redis or a worker fails mid-tool (run as
 * transpiled JavaScript): a TrellisWorker over a PostgreSQL store, with short locks and leases
 * from the environment, whose agent answers every message in three rounds — `stall.step`,
 * then `stall.effect`, then `done: <line>` — with fresh random call ids. Every run of a tool
 * writes a row to the `tool_runs` table (line, tool, idempotency key, worker, database clock),
 * so a test counts what ran where. `stall.step` of a `hold:` line waits, after its row, until
 * the test writes the line to the `gates` table; of a `pause:` line it sleeps STALL_PAUSE_MS
 * (the test SIGSTOPs the process there).
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsString } from 'class-validator';
import pg from 'pg';
import {
  Plugin,
  PostgresStore,
  ScriptedModel,
  Tool,
  Trellis,
  type ModelRequest,
  type ToolContext,
} from '../../index.js';
import { TrellisWorker } from '../../queue.js';

const env = (name: string) =>
  process.env[name] ??
  (() => {
    throw new Error(`${name} is not set`);
  })();
const schema = env('STALL_SCHEMA');
const id = env('STALL_WORKER_ID');
const pauseMs = Number(process.env.STALL_PAUSE_MS ?? 400);
const leaseTtlMs = Number(process.env.STALL_LEASE_MS ?? 10_000);

const pool = new pg.Pool({ connectionString: env('STALL_PG_URL'), max: 3 });
const run = (line: string, tool: string, key: string) =>
  pool.query(`INSERT INTO "${schema}".tool_runs (line, tool, key, worker) VALUES ($1, $2, $3, $4)`, [
    line,
    tool,
    key,
    id,
  ]);

class LineInput {
  @IsString() line!: string;
}

@Plugin({ name: 'stall', version: '1.0.0' })
class StallPlugin {
  @Tool({ name: 'stall.step', description: 'The first step of a line.', input: LineInput, onCrash: 'retry' })
  async step(input: LineInput, ctx: ToolContext): Promise<string> {
    await run(input.line, 'stall.step', ctx.idempotencyKey);
    if (input.line.startsWith('pause:')) await new Promise((resolve) => setTimeout(resolve, pauseMs));
    while (
      input.line.startsWith('hold:') &&
      (await pool.query(`SELECT 1 FROM "${schema}".gates WHERE line = $1`, [input.line])).rowCount === 0
    ) {
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return `stepped ${input.line}`;
  }

  @Tool({ name: 'stall.effect', description: 'The side effect of a line.', input: LineInput, onCrash: 'retry' })
  async effect(input: LineInput, ctx: ToolContext): Promise<string> {
    await run(input.line, 'stall.effect', ctx.idempotencyKey);
    return `effected ${input.line}`;
  }
}

const reply = async (request: ModelRequest) => {
  await new Promise((resolve) => setTimeout(resolve, 20));
  const last = request.messages.at(-1)!;
  const line = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
  if (last.role !== 'tool') return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'stall.step', args: { line } }] };
  if (last.content.startsWith('stepped'))
    return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'stall.effect', args: { line } }] };
  return `done: ${line}`;
};

const store = await PostgresStore.open({ url: env('STALL_PG_URL'), schema, maxConnections: 4 });
const app = Trellis.create({ store, leaseTtlMs });
await app.install(StallPlugin);
const agent = app.agent({ name: 'staller', model: new ScriptedModel(reply), instructions: 'Step, then effect.' });
const lockDurationMs = Number(process.env.STALL_LOCK_MS ?? 5_000);
const worker = new TrellisWorker({
  url: env('STALL_REDIS_URL'),
  prefix: env('STALL_PREFIX'),
  queueName: 'turns',
  store,
  agent: () => agent,
  id,
  concurrency: 4,
  leaseTtlMs,
  lockDurationMs,
  stalledIntervalMs: Number(process.env.STALL_STALLED_MS ?? Math.max(1000, lockDurationMs / 2)),
  busyDelayMs: 100,
});
await worker.start();
process.stdout.write('ready\n');

process.once('SIGTERM', () => {
  void (async () => {
    await worker.close(true).catch(() => undefined);
    await app.stop();
    await pool.end();
    process.exit(0);
  })();
});
