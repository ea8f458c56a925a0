import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Redis } from 'ioredis';
import { MemoryStore, ScriptedModel, Trellis } from '../../../index.js';
import { TrellisWorker } from '../../../queue.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';

const REDIS_SERVER = '/usr/bin/redis-server';
const available = existsSync(REDIS_SERVER);
if (!available)
  process.stdout.write(`skipped: the Redis requirement checks (no ${REDIS_SERVER} to start a private Redis)\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

(available ? describe : describe.skip)('trellis worker checks its Redis (a private redis-server)', () => {
  let server: ChildProcess;
  let url: string;
  let admin: Redis;
  const dir = mkdtempSync(join(tmpdir(), 'trellis-redis-'));

  beforeAll(async () => {
    const port = await freePort();
    url = `redis://127.0.0.1:${port}`;
    // Loopback only, no persistence, evicting keys: everything a queue must not have.
    server = spawn(
      REDIS_SERVER,
      [
        '--port',
        String(port),
        '--bind',
        '127.0.0.1',
        '--dir',
        dir,
        '--save',
        '',
        '--appendonly',
        'no',
        '--maxmemory-policy',
        'allkeys-lru',
      ],
      { stdio: 'ignore' },
    );
    // Until it answers a PING on its own connection (a fresh client per try).
    for (let i = 0; ; i++) {
      const probe = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
      probe.on('error', () => undefined);
      try {
        await probe.connect();
        await probe.ping();
        admin = probe;
        break;
      } catch (error) {
        probe.disconnect();
        if (i > 100) throw error;
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
    }
  });

  afterAll(async () => {
    admin.disconnect();
    if (server.exitCode === null) {
      const exited = new Promise((resolve) => server.once('exit', resolve));
      server.kill('SIGKILL');
      await exited;
    }
    rmSync(dir, { recursive: true, force: true });
  });

  const worker = () => {
    const app = Trellis.create({ store: new MemoryStore() });
    const agent = app.agent({ name: 'a', model: new ScriptedModel(['ok']), instructions: 'x' });
    return new TrellisWorker({ url, store: new MemoryStore(), agent: () => agent });
  };

  it('warns of a maxmemory-policy that evicts, and of no persistence, in words that say what to set', async () => {
    const w = worker();
    await w.start();
    const problems = await w.checkRedis();
    await w.close();

    expect(problems).toHaveLength(2);
    expect(problems[0]).toContain('maxmemory-policy is "allkeys-lru", not "noeviction"');
    expect(problems[0]).toContain('CONFIG SET maxmemory-policy noeviction');
    expect(problems[1]).toContain('neither AOF nor RDB');
  });

  it('`trellis worker` prints each problem as a warning line when it starts, then serves', async () => {
    const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-redis-cli-')));
    // An inline model and a SQLite store: the config imports nothing.
    writeFileSync(
      join(cwd, 'trellis.config.mjs'),
      `export default { agent: { name: 'echo' }, store: 'w.db', queue: ${JSON.stringify(url)}, model: { name: 'echo', async call() { return { text: 'ok', toolCalls: [], usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, model: 'echo' }; } } };`,
    );
    const io = fakeCliIo(cwd);
    const exit = runCli(['node', 'trellis', 'worker'], io);
    try {
      while (!io.stderr.some((line) => line.startsWith('worker '))) {
        if (io.stderr.some((line) => line.startsWith('trellis:'))) throw new Error(io.stderr.join('\n'));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const warnings = io.stderr.filter((line) => line.startsWith('warning: '));
      expect(warnings).toHaveLength(2);
      expect(warnings[0]).toContain('maxmemory-policy is "allkeys-lru", not "noeviction"');
      expect(warnings[1]).toContain('neither AOF nor RDB');
    } finally {
      process.emit('SIGTERM');
      expect(await exit).toBe(0);
      rmSync(cwd, { recursive: true, force: true });
    }
  }, 30_000);

  it('says nothing of a Redis set up for a queue: noeviction and AOF', async () => {
    await admin.config('SET', 'maxmemory-policy', 'noeviction');
    await admin.config('SET', 'appendonly', 'yes');
    const w = worker();
    await w.start();
    const problems = await w.checkRedis();
    await w.close();

    expect(problems).toEqual([]);
  });
});
