import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { Module, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IsString } from 'class-validator';
import request from 'supertest';
import { MemoryStore, Plugin, Tool, type ModelRequest, type SessionStore, type ToolContext } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { TrellisModule, TrellisSessionsModule, type TrellisQueueOptions } from 'trellis/nestjs';
import type { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';

/** What ran, in order, in every app of this file: model calls, tool starts and how each tool call ended. */
const log: string[] = [];

class WaitInput {
  @IsString() line!: string;
}

@Plugin({ name: 'waiter', version: '1.0.0' })
class WaiterPlugin {
  /** Writes `start:<line>`, then waits for its signal (at most 20 s): `aborted:<line>`, or `finished:<line>`. */
  @Tool({ name: 'waiter.wait', description: 'Waits until stopped. Tests only.', input: WaitInput })
  async wait(input: WaitInput, ctx: ToolContext): Promise<string> {
    log.push(`start:${input.line}`);
    const aborted = await new Promise<boolean>((resolve) => {
      const timer = setTimeout(() => resolve(false), 20_000);
      ctx.signal.addEventListener(
        'abort',
        () => {
          clearTimeout(timer);
          resolve(true);
        },
        { once: true },
      );
    });
    log.push(`${aborted ? 'aborted' : 'finished'}:${input.line}`);
    return aborted ? 'stopped' : 'waited';
  }
}

@Module({ imports: [TrellisModule.forFeature([WaiterPlugin])], providers: [WaiterPlugin] })
class WaiterModule {}

/** A `wait:` message calls `waiter.wait` (a fresh call id each time, as real providers give), then answers; any other is answered at once. */
function waitingAgent() {
  const reply = (req: ModelRequest) => {
    const last = req.messages.at(-1)!;
    const user = [...req.messages].reverse().find((m) => m.role === 'user')!.content;
    log.push(`model:${user}:${last.role === 'tool' ? 1 : 0}`);
    if (last.role === 'tool') return `done: ${last.content}`;
    if (user.startsWith('wait:'))
      return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'waiter.wait', args: { line: user } }] };
    return `ok: ${user}`;
  };
  return { name: 'waiter', model: new ScriptedModel(reply), instructions: 'Wait when told.' };
}

const requestContext = (context: ExecutionContext) => ({
  'app.user_id':
    context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-user'] ?? 'ann',
});

async function boot(
  store: SessionStore,
  queue?: TrellisQueueOptions,
  worker?: boolean,
): Promise<{ app: INestApplication; url: string }> {
  const imports = [
    TrellisModule.forRoot({ isGlobal: true, store, agents: [waitingAgent()], queue, worker, requestContext }),
    WaiterModule,
    TrellisSessionsModule.register({ prefix: 'api/w', agent: 'waiter' }),
  ];
  const app = (await Test.createTestingModule({ imports }).compile()).createNestApplication({ logger: false });
  await app.listen(0, '127.0.0.1');
  return { app, url: await app.getUrl() };
}

async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline)
      throw new Error(`Still waiting for ${what} after ${timeoutMs} ms; log: ${log.join(', ')}`);
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
}

/**
 * Posts `message` over real HTTP (JSON, or SSE with `events`) and aborts the request once its
 * tool call started, as a client that goes away does. Resolves with what the fetch did.
 */
async function postThenAbort(url: string, id: string, message: string, events = false): Promise<string> {
  const abort = new AbortController();
  const headers = { 'content-type': 'application/json', ...(events && { accept: 'text/event-stream' }) };
  // An event stream's headers come at once, so the abort lands while its body is read.
  const posting = fetch(`${url}/api/w/sessions/${id}/messages`, {
    method: 'POST',
    headers,
    body: JSON.stringify({ message }),
    signal: abort.signal,
  })
    .then(async (res) => `answered ${res.status}: ${await res.text()}`)
    .catch((error: Error) => error.name);
  await until(() => log.includes(`start:${message}`), `the tool call of ${message}`);
  abort.abort();
  return posting;
}

/** A client that goes away stops its turn: recorded cancelled, rolled back, nothing run after it, the session free for the next message. */
async function expectStopped(url: string, store: SessionStore, id: string, message: string): Promise<void> {
  await until(() => log.includes(`aborted:${message}`), 'the tool to see its signal abort');
  await until(async () => (await store.load(id))?.turns.length === 1, 'the cancelled turn to be recorded');
  const stored = (await store.load(id))!;
  expect(stored.turns.map((t) => [t.input, t.status])).toEqual([[message, 'cancelled']]);
  expect(stored.transcript).toEqual([]);
  // Nothing more runs: no model call after the tool's, the tool did not finish.
  await new Promise((resolve) => setTimeout(resolve, 600));
  expect(log.filter((line) => line.endsWith(message) || line.includes(`:${message}:`))).toEqual([
    `model:${message}:0`,
    `start:${message}`,
    `aborted:${message}`,
  ]);

  const started = Date.now();
  const next = await request(url)
    .post(`/api/w/sessions/${id}/messages`)
    .send({ message: `after ${message}` })
    .expect(200);
  expect([next.body.status, next.body.reply]).toEqual(['completed', `ok: after ${message}`]);
  expect(Date.now() - started).toBeLessThan(3000);
  expect((await store.load(id))!.transcript.map((m) => m.content)).toEqual([
    `after ${message}`,
    `ok: after ${message}`,
  ]);
}

describe('a client that goes away stops its turn (turns in process)', () => {
  let app: INestApplication;
  let url: string;
  const store = new MemoryStore();

  beforeAll(async () => {
    ({ app, url } = await boot(store));
  });

  afterAll(async () => app?.close());

  it('a JSON request aborted mid-turn: the tool sees its signal, the turn is recorded cancelled, the lease is given back', async () => {
    expect(await postThenAbort(url, 'p1', 'wait:json')).toBe('AbortError');

    await expectStopped(url, store, 'p1', 'wait:json');
    expect(await store.listLeases()).toEqual([]);
  });

  it('an event stream closed mid-turn does the same', async () => {
    expect(await postThenAbort(url, 'p2', 'wait:sse', true)).toBe('AbortError');

    await expectStopped(url, store, 'p2', 'wait:sse');
  });

  it('a request that is answered is not cancelled by its connection closing afterwards', async () => {
    const res = await fetch(`${url}/api/w/sessions/p3/messages`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', connection: 'close' },
      body: JSON.stringify({ message: 'quick' }),
    });
    expect(await res.json()).toMatchObject({ status: 'completed', reply: 'ok: quick' });
    expect((await store.load('p3'))!.turns.map((t) => t.status)).toEqual(['completed']);
  });
});

const queued =
  (await haveService('redis', 'a client abort with the worker queue')) &&
  (await haveService('postgres', 'a client abort with the worker queue'));

(queued ? describe : describe.skip)(
  'a client that goes away stops its turn on the worker queue (Redis, PostgreSQL)',
  () => {
    const schemas = new PostgresSchemas();
    const stores: PostgresStore[] = [];
    let web: { app: INestApplication; url: string };
    let worker: { app: INestApplication; url: string };

    beforeAll(async () => {
      const schema = schemas.next();
      const queue = { url: REDIS_URL, prefix: `${schemas.prefix}_a`, queueName: 'turns', pollMs: 200 };
      for (let i = 0; i < 2; i++) stores.push(await schemas.open(schema));
      worker = await boot(stores[0]!, queue, true);
      web = await boot(stores[1]!, queue);
    });

    afterAll(async () => {
      await web?.app.close();
      await worker?.app.close();
      await schemas.dropAll();
      const { Redis } = await import('ioredis');
      const client = new Redis(REDIS_URL);
      const keys = await client.keys(`${schemas.prefix}_a:*`);
      if (keys.length > 0) await client.del(...keys);
      await client.quit();
    });

    it('a JSON request aborted while the worker runs its tool: the worker stops the turn, recorded cancelled, no lease left', async () => {
      expect(await postThenAbort(web.url, 'q1', 'wait:queued')).toBe('AbortError');

      await expectStopped(web.url, stores[1]!, 'q1', 'wait:queued');
      // Neither the kernel's session lease nor the queue's lease is left.
      expect(await stores[1]!.listLeases()).toEqual([]);
    });

    it('an event stream closed while the worker runs its tool does the same', async () => {
      expect(await postThenAbort(web.url, 'q2', 'wait:queued-sse', true)).toBe('AbortError');

      await expectStopped(web.url, stores[1]!, 'q2', 'wait:queued-sse');
    });

    it('a request aborted while its turn waits behind another is stopped when it comes next; the turn ahead of it is left alone', async () => {
      const first = request(web.url)
        .post('/api/w/sessions/q3/messages')
        .send({ message: 'wait:ahead' })
        .then((res) => res);
      await until(() => log.includes('start:wait:ahead'), "the first turn's tool");
      const abort = new AbortController();
      const second = fetch(`${web.url}/api/w/sessions/q3/messages`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ message: 'wait:behind' }),
        signal: abort.signal,
      }).catch((error: Error) => error.name);
      // Queued behind the running turn (its job is in the session's order), then the client goes away.
      await new Promise((resolve) => setTimeout(resolve, 500));
      abort.abort();
      expect(await second).toBe('AbortError');
      await new Promise((resolve) => setTimeout(resolve, 600));
      expect(log).not.toContain('aborted:wait:ahead');

      // The turn ahead is stopped by its owner; the one behind it then comes next and is stopped:
      // before it starts, or (the worker took it first) as soon as the web app sees it is next.
      await request(web.url).post('/api/w/sessions/q3/cancel').expect(200, { cancelled: true });
      expect((await first).body.status).toBe('cancelled');
      await new Promise((resolve) => setTimeout(resolve, 1500));
      const behind = log.filter((line) => line.includes('behind'));
      // Never started, or stopped at its model call, or at its tool (which saw its signal): never run to its end.
      expect([
        [],
        ['model:wait:behind:0'],
        ['model:wait:behind:0', 'start:wait:behind', 'aborted:wait:behind'],
      ]).toContainEqual(behind);
      const next = await request(web.url).post('/api/w/sessions/q3/messages').send({ message: 'later' }).expect(200);
      expect(next.body.reply).toBe('ok: later');
      const turns = (await stores[1]!.load('q3'))!.turns.map((t) => [t.input, t.status]);
      // A turn the worker had started (before its model call, or after) is recorded cancelled; one it never started, not at all.
      const started = turns.some(([input]) => input === 'wait:behind');
      expect(turns).toEqual([
        ['wait:ahead', 'cancelled'],
        ...(started ? [['wait:behind', 'cancelled']] : []),
        ['later', 'completed'],
      ]);
      if (behind.length > 0) expect(started).toBe(true);
      expect((await stores[1]!.load('q3'))!.transcript.map((m) => m.content)).not.toContain('wait:behind');
    });
  },
);
