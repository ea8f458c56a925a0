import { spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { PostgresSchemas } from './postgres-schemas.js';
import { POSTGRES_URL, REDIS_URL } from './services.js';
import { sharedTranspiledProject } from './transpiled-tree.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));

/** A worker process of `scale-worker.ts`, with what it printed. */
export interface WorkerProcess {
  readonly process: ChildProcess;
  readonly id: string;
  /** The exit code; `null` when a signal (the SIGKILL it gave itself) ended it. */
  readonly exited: Promise<number | null>;
  readonly stdout: string[];
}

/**
 * Real `TrellisWorker` processes (test/support/scale-worker.ts, transpiled) on a PostgreSQL
 * schema of their own, with its `tool_ledger` (every tool run, with its idempotency key and
 * worker) and `model_calls` tables, and a Redis prefix of their own; `stop()` ends every
 * process still running, drops the schema and removes the prefix's keys.
 */
export class WorkerProcesses {
  readonly schemas = new PostgresSchemas();
  readonly schema = this.schemas.next();
  readonly prefix = `trellis_w${process.pid}_${Date.now().toString(36)}`;
  private readonly children: WorkerProcess[] = [];
  private script!: (relativePath: string) => string;

  async setUp(): Promise<void> {
    this.script = sharedTranspiledProject();
    await (await this.schemas.open(this.schema)).close();
    await this.schemas.admin.query(`
      CREATE TABLE "${this.schema}".tool_ledger (id bigserial PRIMARY KEY, line text NOT NULL, key text NOT NULL, worker text NOT NULL, at timestamptz NOT NULL DEFAULT clock_timestamp());
      CREATE TABLE "${this.schema}".model_calls (id bigserial PRIMARY KEY, call text NOT NULL, worker text NOT NULL);`);
  }

  /** Starts a worker named `id` (env: scale-worker.ts's options) and resolves once it serves the queue. */
  async start(id: string, env: Record<string, string> = {}): Promise<WorkerProcess> {
    const child = spawn(process.execPath, ['--no-warnings', this.script('test/support/scale-worker.ts')], {
      cwd: ROOT,
      env: {
        ...process.env,
        SCALE_PG_URL: POSTGRES_URL,
        SCALE_REDIS_URL: REDIS_URL,
        SCALE_SCHEMA: this.schema,
        SCALE_PREFIX: this.prefix,
        SCALE_WORKER_ID: id,
        ...env,
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const stdout: string[] = [];
    child.stdout.setEncoding('utf8').on('data', (text: string) => stdout.push(...text.split('\n').filter(Boolean)));
    child.stderr.setEncoding('utf8').on('data', (text: string) => process.stderr.write(`[${id}] ${text}`));
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const worker = { process: child, id, exited, stdout };
    this.children.push(worker);
    while (!stdout.includes('ready')) {
      if (child.exitCode !== null || child.signalCode !== null)
        throw new Error(`worker ${id} exited before it was ready`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    return worker;
  }

  /** The ledger's runs of `line`, oldest first: which worker ran it, under which key. */
  async runsOf(line: string): Promise<{ worker: string; key: string }[]> {
    return (
      await this.schemas.admin.query(
        `SELECT worker, key FROM "${this.schema}".tool_ledger WHERE line = $1 ORDER BY id`,
        [line],
      )
    ).rows as { worker: string; key: string }[];
  }

  async stop(): Promise<void> {
    for (const child of this.children)
      if (child.process.exitCode === null && child.process.signalCode === null) child.process.kill('SIGKILL');
    await Promise.all(this.children.map((c) => c.exited));
    await this.schemas.dropAll();
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${this.prefix}*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  }
}
