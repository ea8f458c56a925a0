import 'reflect-metadata';
import { Controller, Get, Injectable, Module, Param, type INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { IsString } from 'class-validator';
import { request as httpRequest } from 'node:http';
import request from 'supertest';
import { Job, Queue } from 'bullmq';
import {
  Hook,
  MemoryStore,
  Plugin,
  Requires,
  suspend,
  Tool,
  TrellisError,
  type ModelRequest,
  type ScriptedReply,
  type SessionStore,
  type ToolCallInfo,
  type ToolContext,
} from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { jobIdOf } from 'trellis/queue';
import {
  getAgentToken,
  HostedAgent,
  InjectAgent,
  TrellisHost,
  TrellisModule,
  TrellisSessionsModule,
} from 'trellis/nestjs';
import type { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';

const available =
  (await haveService('redis', 'TrellisModule with the worker queue')) &&
  (await haveService('postgres', 'TrellisModule with the worker queue'));
const prefix = `trellis_t${process.pid}_${Date.now().toString(36)}`;
const redis = new URL(REDIS_URL);
const connection = { host: redis.hostname, port: Number(redis.port || 6379) };

class RecordInput {
  @IsString() line!: string;
}

/** What the ledger tool did in one Nest app: the worker's fills up, the web app's stays empty. */
@Injectable()
class Ledger {
  readonly lines: string[] = [];
}

@Plugin({ name: 'ledger', version: '1.0.0' })
class LedgerPlugin {
  constructor(private readonly ledger: Ledger) {}

  @Tool({ name: 'ledger.record', description: 'Records one line in the ledger.', input: RecordInput })
  @Requires({ key: 'app.user_id', optional: true })
  record(input: RecordInput, ctx: ToolContext): string {
    this.ledger.lines.push(`${input.line} by ${String(ctx.get('app.user_id') ?? 'nobody')}`);
    return `recorded ${input.line}`;
  }

  @Hook('tool.gate')
  approval(call: ToolCallInfo) {
    const line = String((call.args as { line?: unknown }).line ?? '');
    return line.startsWith('approve:')
      ? suspend({ message: `Record ${line}?`, allowedDecisions: ['approve', 'reject'] })
      : undefined;
  }
}

@Module({ imports: [TrellisModule.forFeature([LedgerPlugin])], providers: [Ledger, LedgerPlugin], exports: [Ledger] })
class LedgerModule {}

@Controller('ask')
class AskController {
  constructor(@InjectAgent('desk') private readonly desk: HostedAgent) {}
  @Get(':id/:text')
  async ask(@Param('id') id: string, @Param('text') text: string) {
    const session = this.desk.session(id);
    const result = await session.send(text);
    return { result, transcript: session.transcript.length };
  }
}

/** Calls the ledger tool with the user's message, then answers with the tool's output (a `slow:` one after 1.5 s). */
function deskAgent() {
  const reply = async (req: ModelRequest) => {
    const last = req.messages.at(-1)!;
    if (last.role !== 'tool')
      return {
        toolCalls: [{ id: `call-${req.messages.length}`, name: 'ledger.record', args: { line: last.content } }],
      };
    if (last.content.includes('slow:')) await new Promise((resolve) => setTimeout(resolve, 1500));
    return `done: ${last.content}`;
  };
  return { name: 'desk', model: new ScriptedModel(reply), instructions: 'Record what you are told.' };
}

/** What a `held:` message of the front agent waits for before it asks the desk, and who hears that it waits. */
let held: Promise<void> = Promise.resolve();
let onHeld: () => void = () => undefined;

/** Hands each message to the desk agent as a sub-agent (`ask_desk`), so a parked call leaves two sessions waiting. */
function frontAgent() {
  const reply = async (req: ModelRequest): Promise<ScriptedReply> => {
    const turn = req.messages.slice(req.messages.findLastIndex((m) => m.role === 'user'));
    const result = turn.find((m) => m.role === 'tool');
    if (result) return `front: ${result.content}`;
    const message = turn[0]!.content;
    if (message.startsWith('held:')) {
      onHeld();
      await held;
    }
    return { toolCalls: [{ id: 't1', name: 'ask_desk', args: { input: message.replace(/^held:/, '') } }] };
  };
  return {
    name: 'front',
    model: new ScriptedModel(reply),
    instructions: 'Delegate.',
    agents: [{ agent: 'desk', name: 'ask_desk', description: 'Records a line. Tests only.' }],
  };
}

const userContext = (ctx: import('@nestjs/common').ExecutionContext) => {
  const user = ctx.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-user'];
  return user ? { 'app.user_id': user } : {};
};

async function boot(imports: unknown[], controllers: unknown[] = []): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: imports as never[],
    controllers: controllers as never[],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`Still waiting after ${timeoutMs} ms`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** The SSE frames of a response body: `[event, data, id]`. */
function frames(text: string): [string, unknown, string | undefined][] {
  return text
    .split('\n\n')
    .map(
      (frame) =>
        Object.fromEntries(
          frame.split('\n').map((line) => [line.slice(0, line.indexOf(': ')), line.slice(line.indexOf(': ') + 2)]),
        ) as Record<string, string>,
    )
    .filter((fields) => fields['event'] !== undefined)
    .map((fields) => [fields['event']!, JSON.parse(fields['data']!), fields['id']]);
}

/** Reads an SSE response as it streams until `enough` says so, then drops the connection (a client going away). */
function readEvents(
  server: import('node:http').Server,
  path: string,
  options: { method?: string; headers?: Record<string, string>; body?: unknown },
  enough: (seen: ReturnType<typeof frames>) => boolean,
): Promise<ReturnType<typeof frames>> {
  const { port } = server.address() as import('node:net').AddressInfo;
  return new Promise((resolve, reject) => {
    const body = options.body === undefined ? undefined : JSON.stringify(options.body);
    const req = httpRequest(
      {
        host: '127.0.0.1',
        port,
        path,
        method: options.method ?? 'GET',
        headers: {
          accept: 'text/event-stream',
          ...(body && { 'content-type': 'application/json' }),
          ...options.headers,
        },
      },
      (res) => {
        let text = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          text += chunk;
          const seen = frames(text.slice(0, text.lastIndexOf('\n\n') + 2));
          if (enough(seen)) {
            req.destroy();
            resolve(seen);
          }
        });
        res.on('end', () => resolve(frames(text)));
      },
    );
    req.on('error', (error) => (req.destroyed ? undefined : reject(error)));
    if (body) req.write(body);
    req.end();
  });
}

(available ? describe : describe.skip)('TrellisModule with the worker queue (Redis, PostgreSQL)', () => {
  const queueName = 'turns';
  const schemas = new PostgresSchemas();
  const stores: PostgresStore[] = [];
  let schema: string;
  let web: INestApplication;
  let worker: INestApplication;
  let webStore: PostgresStore;
  let count = 0;
  let id: string;

  async function sharedStore(): Promise<PostgresStore> {
    const store = await schemas.open(schema);
    stores.push(store);
    return store;
  }

  beforeAll(async () => {
    schema = schemas.next();
    webStore = await sharedStore();
    // The worker: a second Nest app with the same agents and plugins, its own connection to the store.
    worker = await boot([
      TrellisModule.forRoot({
        store: await sharedStore(),
        agents: [deskAgent(), frontAgent()],
        queue: { connection, prefix, queueName },
        worker: { concurrency: 2 },
      }),
      LedgerModule,
    ]);
    web = await boot(
      [
        TrellisModule.forRoot({
          isGlobal: true,
          store: webStore,
          agents: [deskAgent(), frontAgent()],
          queue: { url: REDIS_URL, prefix, queueName, pollMs: 200 },
          requestContext: userContext,
        }),
        LedgerModule,
        // Every caller may do everything here (the policy is tested in test/integration/hardening/session-authorization.spec.ts); a request without x-user is 'nobody'.
        TrellisSessionsModule.register({
          prefix: 'api/desk',
          agent: 'desk',
          principal: (c) => (typeof c['app.user_id'] === 'string' ? c['app.user_id'] : 'nobody'),
          policy: () => true,
        }),
      ],
      [AskController],
    );
  });

  afterAll(async () => {
    await web?.close();
    await worker?.close();
    // The apps closed theirs; the stores of the refused bootstraps are still open.
    for (const store of stores) await store.close().catch(() => undefined);
    await schemas.dropAll();
    const { Redis } = await import('ioredis');
    const client = new Redis(REDIS_URL);
    const keys = await client.keys(`${prefix}:*`);
    if (keys.length > 0) await client.del(...keys);
    await client.quit();
  });

  beforeEach(() => {
    id = `q${count++}`;
    worker.get(Ledger).lines.length = 0;
  });

  it('runs a message posted to the sessions API on the worker app, with the request context, and reads it back from the shared store', async () => {
    const res = await request(web.getHttpServer())
      .post(`/api/desk/sessions/${id}/messages`)
      .set('x-user', 'u1')
      .send({ message: 'hello' })
      .expect(200);

    expect(res.body).toMatchObject({ status: 'completed', reply: 'done: recorded hello', rounds: 2 });
    expect(worker.get(Ledger).lines).toEqual(['hello by u1']);
    expect(web.get(Ledger).lines).toEqual([]);
    const view = await request(web.getHttpServer()).get(`/api/desk/sessions/${id}`).expect(200);
    expect(view.body.transcript.map((m: { role: string }) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(view.body.pending).toEqual([]);
    expect((await webStore.load(id))!.turns).toHaveLength(1);
  });

  it("queues a service's agent.session(id).send() too, and its transcript then shows what the worker stored", async () => {
    const first = await request(web.getHttpServer()).get(`/ask/${id}/one`).set('x-user', 'u2').expect(200);
    const second = await request(web.getHttpServer()).get(`/ask/${id}/two`).expect(200);

    expect(first.body).toMatchObject({ result: { status: 'completed', reply: 'done: recorded one' }, transcript: 4 });
    expect(second.body).toMatchObject({ result: { status: 'completed', reply: 'done: recorded two' }, transcript: 8 });
    expect(worker.get(Ledger).lines).toEqual(['one by u2', 'two by nobody']);
    expect(web.get(Ledger).lines).toEqual([]);
    const hosted = web.get<HostedAgent>(getAgentToken('desk'));
    expect(
      hosted
        .session(id)
        .transcript.filter((m) => m.role === 'user')
        .map((m) => m.content),
    ).toEqual(['one', 'two']);
  });

  it('parks a call for approval, and a decision posted to the web app runs it once on the worker', async () => {
    const server = web.getHttpServer();
    const first = await request(server)
      .post(`/api/desk/sessions/${id}/messages`)
      .set('x-user', 'clerk')
      .send({ message: 'approve:refund' })
      .expect(200);
    expect(first.body.status).toBe('suspended');
    const callId = first.body.suspended[0].callId as string;
    expect(worker.get(Ledger).lines).toEqual([]);
    const view = await request(server).get(`/api/desk/sessions/${id}`).expect(200);
    expect(view.body.pending).toEqual([expect.objectContaining({ callId, tool: 'ledger.record' })]);

    const approved = await request(server)
      .post(`/api/desk/sessions/${id}/decisions`)
      .set('x-user', 'boss')
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(200);
    const again = await request(server)
      .post(`/api/desk/sessions/${id}/decisions`)
      .set('x-user', 'boss')
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(400);

    expect(approved.body).toMatchObject({ status: 'completed', reply: 'done: recorded approve:refund' });
    expect(again.body).toMatchObject({ statusCode: 400, code: 'InvalidDecision' });
    expect(worker.get(Ledger).lines).toEqual(['approve:refund by boss']);
    expect((await request(server).get(`/api/desk/sessions/${id}`).expect(200)).body.pending).toEqual([]);
  });

  it('streams the events of a queued turn, as the worker emits them, then its result', async () => {
    const res = await request(web.getHttpServer())
      .post(`/api/desk/sessions/${id}/messages`)
      .set('Accept', 'text/event-stream')
      .send({ message: 'streamed' })
      .buffer(true)
      .parse((response, done) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => done(null, text));
      });

    expect(res.status).toBe(200);
    const events = frames(res.body as string);
    const types = events.map(([event]) => event);
    expect(types).toEqual(expect.arrayContaining(['turn.started', 'tool.started', 'tool.finished', 'turn.finished']));
    expect(types.indexOf('turn.started')).toBeLessThan(types.indexOf('tool.started'));
    expect(events.at(-1)).toEqual([
      'result',
      expect.objectContaining({ status: 'completed', reply: 'done: recorded streamed' }),
    ]);
    expect(events.find(([event]) => event === 'tool.started')![1]).toMatchObject({
      sessionId: id,
      tool: 'ledger.record',
      args: { line: 'streamed' },
    });
  });

  it('gives an SSE client that drops mid-turn and reconnects to GET …/events with Last-Event-ID what it missed, then the rest, none twice', async () => {
    const server = web.getHttpServer() as import('node:http').Server;
    if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    // The turn's last model call waits 1.5 s ("slow:"): the client drops once the tool started.
    const first = await readEvents(
      server,
      `/api/desk/sessions/${id}/messages`,
      { method: 'POST', body: { message: 'slow:resumed' } },
      (seen) => seen.some(([event]) => event === 'tool.finished'),
    );
    const lastId = first.at(-1)![2]!;
    expect(lastId).toMatch(/^\d+-\d+$/);

    const rest = await readEvents(
      server,
      `/api/desk/sessions/${id}/events`,
      { headers: { 'last-event-id': lastId } },
      (seen) => seen.some(([event]) => event === 'turn.finished'),
    );

    const all = [...first, ...rest];
    const ids = all.map(([, , eventId]) => eventId);
    expect(new Set(ids).size).toBe(ids.length);
    const types = all.map(([event]) => event);
    expect(types.indexOf('turn.started')).toBe(0);
    expect(types.at(-1)).toBe('turn.finished');
    // Every event of the run, numbered 1, 2, 3 … with no gap where the client was away.
    const run = jobIdOf('send', id, (all[0]![1] as { run: string }).run.split('.').at(-1)!);
    expect(all.every(([, data]) => (data as { run: string }).run === run)).toBe(true);
    expect(all.map(([, data]) => (data as { seq: number }).seq)).toEqual(all.map((_, i) => i + 1));
    await until(() => worker.get(Ledger).lines.length === 1);
  });

  it('runs a retried request with the same Idempotency-Key once, and gives both the same result', async () => {
    const server = web.getHttpServer();
    const a = await request(server)
      .post(`/api/desk/sessions/${id}/messages`)
      .set('Idempotency-Key', 'msg-1')
      .send({ message: 'once' })
      .expect(200);
    const b = await request(server)
      .post(`/api/desk/sessions/${id}/messages`)
      .set('Idempotency-Key', 'msg-1')
      .send({ message: 'once' })
      .expect(200);
    const other = await request(server)
      .post(`/api/desk/sessions/${id}/messages`)
      .set('Idempotency-Key', 'msg-2')
      .send({ message: 'twice' })
      .expect(200);

    expect(b.body).toEqual(a.body);
    expect(other.body.reply).toBe('done: recorded twice');
    expect(worker.get(Ledger).lines).toEqual(['once by nobody', 'twice by nobody']);
    expect((await webStore.load(id))!.turns).toHaveLength(2);
  });

  it('refuses on the worker a queued turn whose access was checked against an owner the session no longer has', async () => {
    const hosted = web.get<HostedAgent>(getAgentToken('desk'));
    const owned = `${id}-owned`;
    await request(web.getHttpServer())
      .post(`/api/desk/sessions/${owned}/messages`)
      .set('x-user', 'clerk')
      .send({ message: 'mine' })
      .expect(200);
    expect((await webStore.load(owned))!.state['trellis.owner']).toBe('clerk');
    const lines = worker.get(Ledger).lines.length;
    await expect(
      hosted.session(owned).send('not yours', { access: { principal: 'mallory', owner: null } }),
    ).rejects.toMatchObject({ code: 'AuthDenied' });
    expect(worker.get(Ledger).lines).toHaveLength(lines);
  });

  it('fails a queued turn the worker cannot run with its code, on the web app', async () => {
    const res = await request(web.getHttpServer())
      .post(`/api/desk/sessions/${id}/decisions`)
      .send({ decisions: [{ callId: 'nope', decision: 'approve' }] })
      .expect(400);
    expect(res.body).toMatchObject({ statusCode: 400, code: 'InvalidDecision' });
  });

  describe('cancelPending() of a hosted session', () => {
    const waiting = async () =>
      (await webStore.list()).filter((s) => s.suspended && (s.id === id || s.id.startsWith(`${id}>`))).map((s) => s.id);
    let bull: Queue;
    beforeAll(() => {
      bull = new Queue(queueName, { connection: { url: REDIS_URL }, prefix });
    });
    afterAll(async () => bull.close());

    it("is a job on the worker: it cancels the suspended turn and its sub-agent's in the shared store, the call never runs, and the web app's copy catches up", async () => {
      const session = web.get<HostedAgent>(getAgentToken('front')).session(id);
      const first = await session.send('approve:refund');
      expect(first.suspended?.map((p) => p.callId)).toEqual(['t1/call-2']);
      expect(await waiting()).toHaveLength(2);

      await expect(session.cancelPending({ key: 'c1' })).resolves.toBe(true);

      // The worker publishes the answer before BullMQ stores the job's return value: wait for it.
      let job: Job | undefined;
      await until(async () => Boolean((job = await Job.fromId(bull, jobIdOf('cancel', id, 'c1')))?.returnvalue));
      expect(job?.returnvalue).toEqual({
        jobId: jobIdOf('cancel', id, 'c1'),
        sessionId: id,
        kind: 'cancel',
        cancelled: true,
        recovered: false,
        worker: worker.get(TrellisHost).workerId,
      });
      expect(await waiting()).toEqual([]);
      expect((await webStore.load(id))!.turns.at(-1)!.status).toBe('cancelled');
      expect(session.transcript.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('Cancelled') });
      expect(await session.pending()).toEqual([]);
      await expect(session.cancelPending()).resolves.toBe(false);
      await expect(session.resume({ decisions: [{ callId: 't1/call-2', decision: 'approve' }] })).rejects.toMatchObject(
        { code: 'InvalidDecision' },
      );
      expect(worker.get(Ledger).lines).toEqual([]);
    });

    it('queued while a turn of the session runs on the worker, waits for it (the session lease), then cancels what that turn left waiting', async () => {
      const session = web.get<HostedAgent>(getAgentToken('front')).session(id);
      let release!: () => void;
      held = new Promise((resolve) => (release = resolve));
      const atModel = new Promise<void>((resolve) => (onHeld = resolve));
      const running = session.send('held:approve:refund');
      await atModel;

      let settled = false;
      const cancelling = session.cancelPending();
      cancelling.then(
        () => (settled = true),
        () => (settled = true),
      );
      // Longer than the worker's busyDelayMs: the cancel job has met the busy session and been put back.
      await new Promise((resolve) => setTimeout(resolve, 800));
      expect(settled).toBe(false);
      release();

      await expect(running).resolves.toMatchObject({ status: 'suspended' });
      await expect(cancelling).resolves.toBe(true);
      expect((await webStore.load(id))!.turns.map((t) => t.status)).toEqual(['cancelled']);
      expect(await waiting()).toEqual([]);
      expect(worker.get(Ledger).lines).toEqual([]);
    });
  });

  it('one app may queue and work (forRootAsync): it runs its own queued turns, and closes its worker on shutdown', async () => {
    const solo = `${queueName}-solo`;
    const store = await sharedStore();
    const app = await boot([
      TrellisModule.forRootAsync({
        agentNames: ['desk'],
        useFactory: async () => ({
          store,
          agents: [deskAgent()],
          queue: { url: REDIS_URL, prefix, queueName: solo, pollMs: 200 },
          worker: true,
        }),
      }),
      LedgerModule,
    ]);
    const bull = new Queue(solo, { connection: { url: REDIS_URL }, prefix });
    try {
      const result = await app.get<HostedAgent>(getAgentToken('desk')).session(id).send('by myself');
      expect(result).toMatchObject({ status: 'completed', reply: 'done: recorded by myself' });
      expect(app.get(Ledger).lines).toEqual(['by myself by nobody']);
      expect(app.get(TrellisHost).workerId).toEqual(expect.any(String));
      expect(await bull.getWorkersCount()).toBe(1);

      await app.close();
      // Redis drops a closed client's entry from CLIENT LIST a moment after the QUIT reply.
      await until(async () => (await bull.getWorkersCount()) === 0, 5000);
    } finally {
      await app.close();
      await bull.close();
    }
  });

  it('on shutdown stops waiting for a queued turn after shutdownTimeoutMs, refuses new ones, and the worker still finishes it', async () => {
    const leaving = await boot([
      TrellisModule.forRoot({
        store: await sharedStore(),
        agents: [deskAgent()],
        queue: { url: REDIS_URL, prefix, queueName, pollMs: 200 },
        shutdownTimeoutMs: 100,
      }),
    ]);
    const session = leaving.get<HostedAgent>(getAgentToken('desk')).session(id);
    const waiting = session.send('slow:report').catch((e: unknown) => e);
    await until(() => worker.get(Ledger).lines.length === 1);

    await leaving.close();

    const error = await waiting;
    expect(TrellisError.is(error, 'Cancelled')).toBe(true);
    await expect(session.send('too late')).rejects.toMatchObject({ code: 'NotStarted' });
    await until(async () => (await webStore.load(id))?.turns.length === 1);
    expect((await webStore.load(id))!.transcript.at(-1)).toMatchObject({
      role: 'assistant',
      content: 'done: recorded slow:report',
    });
  });

  describe('refuses a bad queue option at bootstrap, saying what to fix', () => {
    async function failure(options: Parameters<typeof TrellisModule.forRoot>[0]): Promise<TrellisError> {
      const error = await boot([TrellisModule.forRoot(options)]).catch((e: unknown) => e);
      expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
      return error as TrellisError;
    }
    let store: SessionStore;
    beforeAll(async () => {
      store = await sharedStore();
    });

    it('a URL that is not Redis (its password hidden)', async () => {
      const error = await failure({ store, queue: { url: 'http://user:secret@127.0.0.1:6379' } });
      expect(error.message).toContain('TrellisModule: `queue.url` must be a Redis URL (redis://host:6379)');
      expect(error.message).not.toContain('secret');
    });

    it('no Redis given, or both ways', async () => {
      expect((await failure({ store, queue: {} })).message).toContain(
        '`queue` needs where Redis is: `url`, or `connection: { host, port }`',
      );
      expect((await failure({ store, queue: { url: REDIS_URL, connection } })).message).toContain(
        'takes `url` or `connection`, not both',
      );
      expect((await failure({ store, queue: { connection: { host: '127.0.0.1', port: 70000 } } })).message).toContain(
        '`queue.connection.port` must be a TCP port',
      );
    });

    it('a store the workers cannot share', async () => {
      expect((await failure({ queue: { url: REDIS_URL } })).message).toContain(
        'needs a `store` that this app and its workers share; none is given',
      );
      expect((await failure({ store: new MemoryStore(), queue: { url: REDIS_URL } })).message).toContain(
        'a MemoryStore lives in one process',
      );
    });

    it('a worker without a queue, through forRootAsync too', async () => {
      expect((await failure({ store, worker: true })).message).toContain('`worker` needs `queue`');
      const error = await boot([
        TrellisModule.forRootAsync({ useFactory: () => ({ store, queue: { url: 'redis:nothing' } }) }),
      ]).catch((e: unknown) => e);
      expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
      expect((error as Error).message).toContain('`queue.url` must be a Redis URL');
    });
  });
});
