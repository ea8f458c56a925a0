import 'reflect-metadata';
import type { ExecutionContext, INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { MemoryStore, type SessionStore } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { TrellisModule, TrellisSessionsModule, type TrellisQueueOptions } from 'trellis/nestjs';
import type { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';

/** A model that takes 5 s to answer (abortable): a turn to cancel. */
const slowAgent = () => ({
  name: 'slow',
  model: new ScriptedModel(() => 'late answer', { delayMs: 5000 }),
  instructions: 'Answer slowly.',
});

async function boot(store: SessionStore, queue?: TrellisQueueOptions, worker?: boolean): Promise<INestApplication> {
  // The signed-in user (header x-user, else slow-user) owns the sessions it opens (the sessions API asks its policy on every route).
  const requestContext = (context: ExecutionContext) => ({
    'app.user_id':
      context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers['x-user'] ??
      'slow-user',
  });
  const imports = [
    TrellisModule.forRoot({ isGlobal: true, store, agents: [slowAgent()], queue, worker, requestContext }),
    TrellisSessionsModule.register({ prefix: 'api/slow', agent: 'slow' }),
  ];
  const app = (await Test.createTestingModule({ imports }).compile()).createNestApplication({ logger: false });
  await app.init();
  return app;
}

/** Bob, not the owner, tries to stop the owner's running turn: 403, and the turn goes on to its answer. */
async function foreignStop(app: INestApplication, id: string) {
  const server = app.getHttpServer();
  const sending = request(server)
    .post(`/api/slow/sessions/${id}/messages`)
    .send({ message: 'write a long report' })
    .then((res) => res);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const denied = await request(server).post(`/api/slow/sessions/${id}/cancel?keepSteps=false`).set('x-user', 'bob');
  return { denied, sent: await sending };
}

/** Posts a message, cancels it 300 ms later; both answers and how long the turn took. */
async function sendThenCancel(app: INestApplication, id: string, query = '') {
  const server = app.getHttpServer();
  const started = Date.now();
  const sending = request(server)
    .post(`/api/slow/sessions/${id}/messages`)
    .send({ message: 'write a long report' })
    .then((res) => res);
  await new Promise((resolve) => setTimeout(resolve, 300));
  const cancel = await request(server).post(`/api/slow/sessions/${id}/cancel${query}`).expect(200);
  const sent = await sending;
  return { cancel: cancel.body, sent: sent.body, ms: Date.now() - started };
}

describe('POST <prefix>/sessions/:id/cancel with turns in process', () => {
  let app: INestApplication;
  let store: MemoryStore;

  beforeAll(async () => {
    store = new MemoryStore();
    app = await boot(store);
  });

  afterAll(async () => app?.close());

  it('stops the running turn: cancelled, its user message kept; a second cancel finds nothing', async () => {
    const { cancel, sent, ms } = await sendThenCancel(app, 'p1');
    expect(cancel).toEqual({ cancelled: true });
    expect(sent.status).toBe('cancelled');
    expect(ms).toBeLessThan(3000);
    expect((await store.load('p1'))!.transcript.map((m) => m.content)).toEqual(['write a long report']);
    await request(app.getHttpServer()).post('/api/slow/sessions/p1/cancel').expect(200, { cancelled: false });
  });

  it('?keepSteps=false rolls the turn back; a bad value is a 400', async () => {
    const { cancel, sent } = await sendThenCancel(app, 'p2', '?keepSteps=false');
    expect([cancel, sent.status]).toEqual([{ cancelled: true }, 'cancelled']);
    expect((await store.load('p2'))!.transcript).toEqual([]);
    const bad = await request(app.getHttpServer()).post('/api/slow/sessions/p2/cancel?keepSteps=maybe').expect(400);
    expect(JSON.stringify(bad.body)).toContain('keepSteps must be true or false');
  });

  it("refuses another user's stop of the running turn at once (403, not after the turn), and the turn ends with its answer", async () => {
    const started = Date.now();
    const { denied, sent } = await foreignStop(app, 'p3');
    expect([denied.status, denied.body.code]).toEqual([403, 'AuthDenied']);
    expect(sent.body.status).toBe('completed');
    expect(sent.body.reply).toBe('late answer');
    expect(Date.now() - started).toBeGreaterThanOrEqual(4500);
  });
});

const queued =
  (await haveService('redis', 'POST cancel with the worker queue')) &&
  (await haveService('postgres', 'POST cancel with the worker queue'));

(queued ? describe : describe.skip)(
  'POST <prefix>/sessions/:id/cancel with the worker queue (Redis, PostgreSQL)',
  () => {
    const schemas = new PostgresSchemas();
    const stores: PostgresStore[] = [];
    let web: INestApplication;
    let worker: INestApplication;
    let queue: TrellisQueueOptions;

    beforeAll(async () => {
      const schema = schemas.next();
      queue = { url: REDIS_URL, prefix: `${schemas.prefix}_c`, queueName: 'turns', pollMs: 200 };
      for (let i = 0; i < 2; i++) stores.push(await schemas.open(schema));
      worker = await boot(stores[0]!, queue, true);
      web = await boot(stores[1]!, queue);
    });

    afterAll(async () => {
      await web?.close();
      await worker?.close();
      await schemas.dropAll();
      const { Redis } = await import('ioredis');
      const client = new Redis(REDIS_URL);
      const keys = await client.keys(`${schemas.prefix}_c:*`);
      if (keys.length > 0) await client.del(...keys);
      await client.quit();
    });

    it('the web instance cancels the turn the worker runs: the model call is aborted there, the turn ends cancelled', async () => {
      const { cancel, sent, ms } = await sendThenCancel(web, 'q1');
      expect(cancel).toEqual({ cancelled: true });
      expect(sent.status).toBe('cancelled');
      expect(ms).toBeLessThan(3000);
      expect((await stores[1]!.load('q1'))!.turns.map((t) => t.status)).toEqual(['cancelled']);
    });

    it("refuses another user's stop of a turn the worker runs (403), and the turn lands with its answer", async () => {
      const { denied, sent } = await foreignStop(web, 'q1');
      expect([denied.status, denied.body.code]).toEqual([403, 'AuthDenied']);
      expect([sent.body.status, sent.body.reply]).toEqual(['completed', 'late answer']);
      expect((await stores[1]!.load('q1'))!.turns.map((t) => t.status)).toEqual(['cancelled', 'completed']);
    });

    it("refuses another user's stop or watch of a brand-new session's first turn on the worker, before it is in the store (403); its opener may watch it", async () => {
      const server = web.getHttpServer() as import('node:http').Server;
      if (!server.listening) await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      const { port } = server.address() as import('node:net').AddressInfo;
      const watch = async (headers: Record<string, string>) => {
        const abort = new AbortController();
        const res = await fetch(`http://127.0.0.1:${port}/api/slow/sessions/q2/events`, {
          headers: { accept: 'text/event-stream', ...headers },
          signal: abort.signal,
        });
        abort.abort();
        return res.status;
      };
      const sending = request(server)
        .post('/api/slow/sessions/q2/messages')
        .send({ message: 'write a long report' })
        .then((res) => res);
      await new Promise((resolve) => setTimeout(resolve, 300));
      // Nothing of the session is readable from the store yet: its owner is the principal of the turn the worker runs.
      expect((await stores[1]!.load('q2'))?.transcript ?? []).toEqual([]);

      const stop = await request(server).post('/api/slow/sessions/q2/cancel').set('x-user', 'bob');
      expect([stop.status, stop.body.code]).toEqual([403, 'AuthDenied']);
      expect(await watch({ 'x-user': 'bob' })).toBe(403);
      expect(await watch({})).toBe(200);
      expect([(await sending).body.status, (await sending).body.reply]).toEqual(['completed', 'late answer']);
    });
  },
);
