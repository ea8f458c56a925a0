import 'reflect-metadata';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import type { CliIo } from '../../../src/hosts/cli/cli-io.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { TurnQueue } from '../../../queue.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { POSTGRES_URL, REDIS_URL, haveService } from '../../support/services.js';

const NOTES = fileURLToPath(new URL('../../fixtures/cli/gated-notes.plugin.ts', import.meta.url));
const available =
  (await haveService('postgres', 'trellis worker and run on PostgreSQL')) &&
  (await haveService('redis', 'trellis worker on Redis'));
const schemas = available ? new PostgresSchemas() : undefined;

interface FakeIo extends CliIo {
  readonly stdout: string[];
  readonly stderr: string[];
}

function fakeIo(cwd: string): FakeIo {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    write: (t) => void stdout.push(t),
    out: (l = '') => void stdout.push(`${l}\n`),
    err: (l) => void stderr.push(l),
    stdin: Readable.from(['']),
    cwd,
    env: {},
    exitCode: 0,
  };
}

/** An echo model written inline, so the config imports nothing. */
const CONFIG = (schema: string, queue: object) => `
export default {
  agent: { name: 'echo' },
  store: ${JSON.stringify(POSTGRES_URL)},
  storeSchema: ${JSON.stringify(schema)},
  queue: ${JSON.stringify(queue)},
  model: {
    name: 'echo',
    async call(request) {
      const last = request.messages.at(-1);
      return { text: 'echo: ' + last.content, toolCalls: [], usage: { inputTokens: 1, outputTokens: 1, totalTokens: 2 }, model: 'echo' };
    },
  },
};`;

(available ? describe : describe.skip)('trellis CLI on PostgreSQL and Redis', () => {
  let cwd: string;
  let schema: string;
  const queue = { url: REDIS_URL, name: 'cli', prefix: `trellis_t${process.pid}_${Date.now().toString(36)}` };

  beforeEach(() => {
    cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-worker-cli-')));
    schema = schemas!.next();
    writeFileSync(join(cwd, 'trellis.config.mjs'), CONFIG(schema, queue));
  });

  afterEach(() => rmSync(cwd, { recursive: true, force: true }));

  afterAll(async () => {
    await schemas?.dropAll();
  });

  it('runs turns with `trellis run` against the PostgreSQL store named in the config', async () => {
    const first = fakeIo(cwd);
    expect(await runCli(['node', 'trellis', 'run', '-s', 'p1', 'hello'], first)).toBe(0);
    const second = fakeIo(cwd);
    expect(await runCli(['node', 'trellis', 'run', '-s', 'p1', 'again'], second)).toBe(0);

    expect(second.stdout.join('')).toContain('echo: again');
    const { rows } = await schemas!.admin.query(
      `SELECT message::text FROM "${schema}".messages WHERE session_id = 'p1' ORDER BY seq`,
    );
    expect(rows.map((r: { message: string }) => JSON.parse(r.message).content)).toEqual([
      'hello',
      'echo: hello',
      'again',
      'echo: again',
    ]);
  });

  it('serves the queue with `trellis worker` until SIGTERM', async () => {
    const io = fakeIo(cwd);
    const exit = runCli(['node', 'trellis', 'worker', '--concurrency', '2'], io);
    while (!io.stderr.some((l) => l.startsWith('worker '))) {
      if (io.stderr.some((l) => l.startsWith('trellis:'))) throw new Error(io.stderr.join('\n'));
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    const turns = new TurnQueue({ url: REDIS_URL, queueName: queue.name, prefix: queue.prefix, pollMs: 200 });
    try {
      const done = await turns.send({ agent: 'echo', sessionId: 'w1', key: 'm1', message: 'queued' });
      const wrong = await turns
        .send({ agent: 'billing', sessionId: 'w2', key: 'm1', message: 'x' })
        .catch((e: unknown) => e);

      expect(done.result.reply).toBe('echo: queued');
      expect(wrong).toMatchObject({ code: 'UnknownAgent' });
    } finally {
      await turns.close();
      process.emit('SIGTERM');
    }

    expect(await exit).toBe(0);
    expect(io.stderr.at(-1)).toBe('stopping: finishing the turns in progress');
  });

  it('run --queue and resume --queue hand the turns to a `trellis worker`: a suspended call approved through the queue', async () => {
    const testing = fileURLToPath(new URL('../../../testing.ts', import.meta.url));
    writeFileSync(join(cwd, 'package.json'), JSON.stringify({ type: 'module' }));
    rmSync(join(cwd, 'trellis.config.mjs'));
    writeFileSync(
      join(cwd, 'trellis.config.ts'),
      `import { ScriptedModel } from '${testing}';
       import { GatedNotesPlugin } from '${NOTES}';
       export default {
         agent: { name: 'noter' },
         plugins: [GatedNotesPlugin],
         store: ${JSON.stringify(POSTGRES_URL)},
         storeSchema: ${JSON.stringify(schema)},
         queue: ${JSON.stringify(queue)},
         model: new ScriptedModel((request) => request.messages.at(-1)?.role === 'tool' ? 'Done: ' + request.messages.at(-1)?.content : { toolCalls: [{ name: 'notes.write', args: { text: request.messages.at(-1)?.content } }] }),
       };`,
    );
    const workerIo = fakeIo(cwd);
    const worker = runCli(['node', 'trellis', 'worker'], workerIo);
    const redis = new Redis(REDIS_URL);
    try {
      while (!workerIo.stderr.some((l) => l.startsWith('worker '))) {
        if (workerIo.stderr.some((l) => l.startsWith('trellis:'))) throw new Error(workerIo.stderr.join('\n'));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const asked = fakeIo(cwd);
      expect(await runCli(['node', 'trellis', 'run', '--queue', '-s', 'q1', 'buy milk'], asked)).toBe(0);
      const callId = /--approve (\S+)/.exec(asked.stdout.join(''))?.[1];
      expect(callId).toBeDefined();
      expect(asked.stdout.join('')).toContain('Write this note?');

      const approved = fakeIo(cwd);
      expect(await runCli(['node', 'trellis', 'resume', 'q1', '--approve', callId!, '--queue'], approved)).toBe(0);
      expect(approved.stdout.join('')).toContain('Done: noted buy milk');
      // The tool's activity came back over Redis from the worker.
      expect(approved.stderr.join('\n')).toContain('notes.write');

      // Both turns were jobs on the queue, and the transcript is in PostgreSQL.
      const jobs = (await redis.keys(`${queue.prefix}:${queue.name}:*q1*`)).filter((k) =>
        /:(send|resume)\.q1\.[^:]+$/.test(k),
      );
      expect(jobs.map((k) => k.split(':').at(-1)!.split('.')[0]).sort()).toEqual(['resume', 'send']);
      const { rows } = await schemas!.admin.query(
        `SELECT message->>'role' AS role FROM "${schema}".messages WHERE session_id = 'q1' ORDER BY seq`,
      );
      expect(rows.map((r: { role: string }) => r.role)).toEqual(['user', 'assistant', 'tool', 'assistant']);
    } finally {
      await redis.quit();
      process.emit('SIGTERM');
    }
    expect(await worker).toBe(0);
  }, 60_000);

  it('`trellis cancel <session>` stops the turn a `trellis worker` runs; with nothing running it says so', async () => {
    // A model that answers after 10 s unless its call is aborted.
    writeFileSync(
      join(cwd, 'trellis.config.mjs'),
      CONFIG(schema, queue).replace(
        'async call(request) {',
        "async call(request) { await new Promise((resolve) => { const t = setTimeout(resolve, 10000); request.signal?.addEventListener('abort', () => { clearTimeout(t); resolve(); }); }); if (request.signal?.aborted) throw Object.assign(new Error('aborted'), { name: 'AbortError' });",
      ),
    );
    const workerIo = fakeIo(cwd);
    const worker = runCli(['node', 'trellis', 'worker'], workerIo);
    const turns = new TurnQueue({ url: REDIS_URL, queueName: queue.name, prefix: queue.prefix, pollMs: 200 });
    try {
      while (!workerIo.stderr.some((l) => l.startsWith('worker '))) {
        if (workerIo.stderr.some((l) => l.startsWith('trellis:'))) throw new Error(workerIo.stderr.join('\n'));
        await new Promise((resolve) => setTimeout(resolve, 50));
      }
      const idle = fakeIo(cwd);
      expect(await runCli(['node', 'trellis', 'cancel', 'c1'], idle)).toBe(0);
      expect(idle.stdout.join('')).toContain('No turn of session c1 is running or queued');
      const started = Date.now();
      const running = await turns.enqueueSend({ agent: 'echo', sessionId: 'c1', key: 'm1', message: 'slow' });
      await new Promise((resolve) => setTimeout(resolve, 300));
      const io = fakeIo(cwd);
      expect(await runCli(['node', 'trellis', 'cancel', 'c1'], io)).toBe(0);
      expect(io.stdout.join('')).toContain(`Cancelled turn ${running.jobId} of session c1`);
      expect((await running.result).result.status).toBe('cancelled');
      expect(Date.now() - started).toBeLessThan(8000);
    } finally {
      await turns.close();
      process.emit('SIGTERM');
    }
    expect(await worker).toBe(0);
  }, 60_000);

  it('run --queue without a queue in the config says what to add', async () => {
    writeFileSync(join(cwd, 'trellis.config.mjs'), CONFIG(schema, { url: REDIS_URL }).replace(/queue: .*,\n/, ''));
    const io = fakeIo(cwd);

    expect(await runCli(['node', 'trellis', 'run', '--queue', 'hello'], io)).toBe(1);
    expect(io.stderr[0]).toMatch(/No queue configured: .*trellis\.config\.mjs has no `queue`/);

    // The operator's commands say the same, without naming a --queue flag they do not have.
    const parked = fakeIo(cwd);
    expect(await runCli(['node', 'trellis', 'queue', 'parked'], parked)).toBe(1);
    expect(parked.stderr[0]).toMatch(/^trellis: No queue configured: .*trellis\.config\.mjs has no `queue`/);
  });

  it('`trellis sessions prune --older-than <days>` deletes the PostgreSQL sessions not written for that long, and refuses a bad count', async () => {
    for (const id of ['old', 'recent'])
      expect(await runCli(['node', 'trellis', 'run', '-s', id, 'hello'], fakeIo(cwd))).toBe(0);
    await schemas!.admin.query(
      `UPDATE "${schema}".sessions SET updated_at = now() - interval '31 days' WHERE id = 'old'`,
    );

    const io = fakeIo(cwd);
    expect(await runCli(['node', 'trellis', 'sessions', 'prune', '--older-than', '30'], io)).toBe(0);

    expect(io.stdout.join('')).toMatch(/^Pruned 1 session not written for 30 days from /);
    const { rows } = await schemas!.admin.query(`SELECT id FROM "${schema}".sessions ORDER BY id`);
    expect(rows.map((r: { id: string }) => r.id)).toEqual(['recent']);
    for (const bad of ['0', '1.5', 'a month']) {
      const refused = fakeIo(cwd);
      expect(await runCli(['node', 'trellis', 'sessions', 'prune', '--older-than', bad], refused)).toBe(2);
      expect(refused.stderr[0]).toContain('--older-than must be a whole number of days');
    }
  });

  it("lists and shows the PostgreSQL store's sessions with `trellis sessions`, rather than open the URL as a file", async () => {
    expect(await runCli(['node', 'trellis', 'run', '-s', 'p1', 'hello'], fakeIo(cwd))).toBe(0);
    const listed = fakeIo(cwd);
    const shown = fakeIo(cwd);

    expect(await runCli(['node', 'trellis', 'sessions'], listed)).toBe(0);
    expect(await runCli(['node', 'trellis', 'sessions', 'show', 'p1'], shown)).toBe(0);

    expect(listed.stdout.join('')).toMatch(/^p1 {2}echo {2}1 turn {2}/);
    expect(shown.stdout.join('')).toContain('echo: hello');
  });

  it('refuses to start a worker when the config names no queue', async () => {
    writeFileSync(join(cwd, 'trellis.config.mjs'), CONFIG(schema, { url: REDIS_URL }).replace(/queue: .*,\n/, ''));
    const io = fakeIo(cwd);

    expect(await runCli(['node', 'trellis', 'worker'], io)).toBe(1);
    expect(io.stderr[0]).toMatch(/No queue to serve: .*trellis\.config\.mjs has no `queue`/);
  });
});
