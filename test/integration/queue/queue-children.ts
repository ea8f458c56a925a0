import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));

/** A child process of a queue test, with what it printed on stdout. */
export interface Child {
  readonly process: ChildProcess;
  readonly id: string;
  readonly exited: Promise<number | null>;
  readonly stdout: string[];
}

/** Starts `node <script>` (a transpiled support file) with `env`; its stderr goes to the test's, marked with `id`. */
export function startChild(script: string, id: string, env: Record<string, string>): Child {
  const child = spawn(process.execPath, ['--no-warnings', script], {
    cwd: ROOT,
    env: { ...process.env, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const stdout: string[] = [];
  child.stdout.setEncoding('utf8').on('data', (text: string) => stdout.push(...text.split('\n').filter(Boolean)));
  child.stderr.setEncoding('utf8').on('data', (text: string) => process.stderr.write(`[${id}] ${text}`));
  const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
  return { process: child, id, exited, stdout };
}

/** Resolves once the child printed `ready`; throws when it exited first. */
export async function ready(child: Child, timeoutMs = 60_000): Promise<void> {
  const until = Date.now() + timeoutMs;
  while (!child.stdout.includes('ready')) {
    if (child.process.exitCode !== null || child.process.signalCode !== null)
      throw new Error(`${child.id} exited before it was ready`);
    if (Date.now() > until) throw new Error(`${child.id} was not ready within ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** Polls `check` every 50 ms until it gives a truthy value (returned), at most `timeoutMs`. */
export async function until<T>(what: string, check: () => Promise<T>, timeoutMs = 30_000): Promise<NonNullable<T>> {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value) return value;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** A free TCP port on 127.0.0.1. */
async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/**
 * A private `redis-server` without persistence (`--save "" --appendonly no`) on a free port,
 * this test's own: `restart()` kills it (SIGKILL) and starts it again on the same port with
 * nothing in it, as a Redis without persistence comes back. The shared Redis is never touched.
 */
export class PrivateRedis {
  static readonly SERVER = '/usr/bin/redis-server';
  /** Whether a private Redis can be started here; prints the one skip line when not. */
  static available(what: string): boolean {
    if (existsSync(PrivateRedis.SERVER)) return true;
    if (process.env.TRELLIS_REQUIRE_SERVICES === '1')
      throw new Error(`${what} needs ${PrivateRedis.SERVER} to start a private Redis`);
    process.stdout.write(`skipped: ${what} (no ${PrivateRedis.SERVER} to start a private Redis)\n`);
    return false;
  }

  private child: ChildProcess | undefined;
  private readonly dir = mkdtempSync(join(tmpdir(), 'trellis-redis-'));
  port = 0;

  get url(): string {
    return `redis://127.0.0.1:${this.port}`;
  }

  async start(): Promise<void> {
    this.port ||= await freePort();
    const child = spawn(
      PrivateRedis.SERVER,
      [
        '--port',
        String(this.port),
        '--bind',
        '127.0.0.1',
        '--dir',
        this.dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--daemonize',
        'no',
      ],
      { stdio: 'ignore' },
    );
    this.child = child;
    // Up once it answers a PING, on a fresh connection per try.
    await until(
      'the private redis-server',
      async () => {
        if (child.exitCode !== null) throw new Error('redis-server exited at start');
        const probe = new Redis(this.url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
        try {
          return await probe.connect().then(
            () => probe.ping(),
            () => undefined,
          );
        } finally {
          probe.disconnect();
        }
      },
      10_000,
    );
  }

  /** Kills it for good and removes its directory. */
  async stop(): Promise<void> {
    await this.kill();
    rmSync(this.dir, { recursive: true, force: true });
  }

  /** Kills it; resolves once the process is gone. */
  async kill(): Promise<void> {
    const child = this.child;
    if (!child || child.exitCode !== null || child.signalCode !== null) return;
    const gone = new Promise((resolve) => child.once('exit', resolve));
    child.kill('SIGKILL');
    await gone;
  }

  async restart(): Promise<void> {
    await this.kill();
    await this.start();
  }
}
