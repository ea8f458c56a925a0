import 'reflect-metadata';
import { Injectable, type CanActivate, type ExecutionContext, type INestApplication } from '@nestjs/common';
import { APP_GUARD } from '@nestjs/core';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { Queue } from 'bullmq';
import { MemoryStore, type ModelRequest, type ScriptedReply, type SessionStore } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { jobIdOf } from 'trellis/queue';
import {
  getAgentToken,
  ownerOnlySessionPolicy,
  TrellisModule,
  TrellisSessionsModule,
  type HostedAgent,
  type SessionAccessRequest,
  type TrellisQueueOptions,
} from 'trellis/nestjs';
import type { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../../support/services.js';
import { Ledger, LedgerModule } from './ledger-plugin.js';

/** The app's own authorisation, as a user would write it: every route needs the desk's token. */
@Injectable()
class TokenGuard implements CanActivate {
  canActivate(context: ExecutionContext): boolean {
    return (
      context.switchToHttp().getRequest<{ headers: Record<string, string | undefined> }>().headers.authorization ===
      'Bearer desk-token'
    );
  }
}

const signedIn = { Authorization: 'Bearer desk-token' };

/** What a `held:` message waits for before its model call, who hears that it waits, and what lets it go on. */
let held: Promise<void> = Promise.resolve();
let onHeld: () => void = () => undefined;
let release: () => void = () => undefined;

/** Records each message with `ledger.record` (whose gate parks `approve:` lines), then answers with the tool's output. */
function deskAgent() {
  const reply = async (req: ModelRequest): Promise<ScriptedReply> => {
    const last = req.messages.at(-1)!;
    if (last.role === 'tool') return `done: ${last.content}`;
    if (last.content.startsWith('held:')) {
      onHeld();
      await held;
    }
    return {
      toolCalls: [
        {
          id: `call-${req.messages.length}`,
          name: 'ledger.record',
          args: { line: last.content.replace(/^held:/, '') },
        },
      ],
    };
  };
  return { name: 'desk', model: new ScriptedModel(reply), instructions: 'Record what you are told.' };
}

async function boot(store: SessionStore, queue?: TrellisQueueOptions, worker?: boolean): Promise<INestApplication> {
  // One signed-in user, who owns the sessions it opens and decides on their calls.
  const requestContext = () => ({ 'app.user_id': 'desk-user' });
  const policy = (r: SessionAccessRequest) =>
    r.action === 'decide' ? r.owner === r.principal : ownerOnlySessionPolicy(r);
  const imports = [
    TrellisModule.forRoot({ isGlobal: true, store, agents: [deskAgent()], queue, worker, requestContext }),
    LedgerModule,
    TrellisSessionsModule.register({ prefix: 'api/desk', agent: 'desk', policy }),
  ];
  const ref = await Test.createTestingModule({
    imports,
    providers: [{ provide: APP_GUARD, useClass: TokenGuard }],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

/** Posts `message` to session `id` and checks that its call is left waiting; the call's id. */
async function parked(app: INestApplication, id: string, message = 'approve:refund'): Promise<string> {
  const res = await request(app.getHttpServer())
    .post(`/api/desk/sessions/${id}/messages`)
    .set(signedIn)
    .send({ message })
    .expect(200);
  expect(res.body.status).toBe('suspended');
  return res.body.suspended[0].callId as string;
}

async function pendingOf(app: INestApplication, id: string): Promise<unknown[]> {
  return (await request(app.getHttpServer()).get(`/api/desk/sessions/${id}`).set(signedIn).expect(200)).body.pending;
}

describe('DELETE <prefix>/sessions/:id/pending with turns in process', () => {
  let store: MemoryStore;
  const apps: INestApplication[] = [];

  beforeEach(async () => {
    store = new MemoryStore();
    apps.push(await boot(store));
  });

  afterEach(async () => {
    // A failed test must not leave a held turn that shutdown would wait for.
    release();
    for (const app of apps.splice(0)) await app.close();
  });

  it('withdraws the waiting call: it never runs, a second DELETE answers cancelled false, and the session takes a new message', async () => {
    const app = apps[0]!;
    const server = app.getHttpServer();
    const callId = await parked(app, 's1');
    expect(await pendingOf(app, 's1')).toEqual([expect.objectContaining({ callId, tool: 'ledger.record' })]);

    const withdrawn = await request(server).delete('/api/desk/sessions/s1/pending').set(signedIn).expect(200);
    const again = await request(server).delete('/api/desk/sessions/s1/pending').set(signedIn).expect(200);

    expect(withdrawn.body).toEqual({ cancelled: true, recovered: false });
    expect(again.body).toEqual({ cancelled: false, recovered: false });
    const view = await request(server).get('/api/desk/sessions/s1').set(signedIn).expect(200);
    expect(view.body.pending).toEqual([]);
    expect(view.body.transcript.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('Cancelled') });
    expect((await store.load('s1'))!.turns.map((t) => t.status)).toEqual(['cancelled']);
    const late = await request(server)
      .post('/api/desk/sessions/s1/decisions')
      .set(signedIn)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(400);
    expect(late.body).toMatchObject({ code: 'InvalidDecision' });
    const next = await request(server)
      .post('/api/desk/sessions/s1/messages')
      .set(signedIn)
      .send({ message: 'plain' })
      .expect(200);
    expect(next.body).toMatchObject({ status: 'completed', reply: 'done: recorded plain' });
    expect(app.get(Ledger).lines).toEqual(['plain']);
  });

  it("shows a waiting turn before the decision: the user's message and the call in the transcript, arguments as objects", async () => {
    const server = apps[0]!.getHttpServer();
    const posted = await request(server)
      .post('/api/desk/sessions/v1/messages')
      .set(signedIn)
      .send({ message: 'approve:refund 40' })
      .expect(200);
    expect(posted.body.suspended[0].arguments).toEqual({ line: 'approve:refund 40' });

    const view = await request(server).get('/api/desk/sessions/v1').set(signedIn).expect(200);

    expect(view.body.transcript).toEqual([
      { role: 'user', content: 'approve:refund 40' },
      expect.objectContaining({ role: 'assistant', toolCalls: [expect.objectContaining({ name: 'ledger.record' })] }),
    ]);
    expect(view.body.pending).toEqual([
      expect.objectContaining({ tool: 'ledger.record', arguments: { line: 'approve:refund 40' } }),
    ]);
    const decided = await request(server)
      .post('/api/desk/sessions/v1/decisions')
      .set(signedIn)
      .send({ decisions: [{ callId: posted.body.suspended[0].callId, decision: 'approve' }] })
      .expect(200);
    expect(decided.body).toMatchObject({ status: 'completed' });
    // Once the turn ends, the same messages are the stored transcript's: nothing shown twice.
    const after = await request(server).get('/api/desk/sessions/v1').set(signedIn).expect(200);
    expect(after.body.transcript.filter((m: { role: string }) => m.role === 'user')).toEqual([
      { role: 'user', content: 'approve:refund 40' },
    ]);
  });

  it('answers 404 SessionNotFound for a session without messages, as GET :id does, and stores nothing', async () => {
    const res = await request(apps[0]!.getHttpServer())
      .delete('/api/desk/sessions/nobody/pending')
      .set(signedIn)
      .expect(404);

    expect(res.body).toMatchObject({ statusCode: 404, code: 'SessionNotFound' });
    expect(await store.load('nobody')).toBeUndefined();
  });

  it('refuses a bad waitForLease, an unknown query parameter or a too long Idempotency-Key with 400 before anything runs; a good waitForLease is taken', async () => {
    const app = apps[0]!;
    const server = app.getHttpServer();
    await parked(app, 's2');

    for (const query of [
      'waitForLease=abc',
      'waitForLease=-1',
      'waitForLease=1.5',
      'waitForLease=',
      'waitForLease=1e3',
      'waitForLease=60001',
      'waitForLease=1&waitForLease=2',
    ]) {
      const res = await request(server).delete(`/api/desk/sessions/s2/pending?${query}`).set(signedIn);
      expect([query, res.status, res.body.message]).toEqual([
        query,
        400,
        ['waitForLease must be a whole number of milliseconds from 0 to 60000, e.g. ?waitForLease=5000'],
      ]);
    }
    const unknown = await request(server).delete('/api/desk/sessions/s2/pending?force=true').set(signedIn).expect(400);
    const longKey = await request(server)
      .delete('/api/desk/sessions/s2/pending')
      .set(signedIn)
      .set('Idempotency-Key', 'k'.repeat(201))
      .expect(400);

    expect(unknown.body.message).toEqual(['property force should not exist']);
    expect(longKey.body).toMatchObject({ code: 'InvalidOptions' });
    expect(await pendingOf(app, 's2')).toHaveLength(1);
    expect(
      (await request(server).delete('/api/desk/sessions/s2/pending?waitForLease=0').set(signedIn).expect(200)).body,
    ).toEqual({ cancelled: true, recovered: false });
    expect(app.get(Ledger).lines).toEqual([]);
  });

  it('answers 409 SessionBusy while another instance runs a turn of the session, and with waitForLease waits for that turn, then cancels what it left', async () => {
    // Two instances of one app on one store, as behind a load balancer.
    apps.push(await boot(store));
    const [a, b] = apps as [INestApplication, INestApplication];
    held = new Promise((resolve) => (release = resolve));
    const atModel = new Promise<void>((resolve) => (onHeld = resolve));
    // a's turn holds the session's lease from before its model call until its checkpoint.
    const running = request(a.getHttpServer())
      .post('/api/desk/sessions/s3/messages')
      .set(signedIn)
      .send({ message: 'held:approve:refund' })
      .then((res) => res);
    await atModel;

    const busy = await request(b.getHttpServer()).delete('/api/desk/sessions/s3/pending').set(signedIn).expect(409);
    let settled = false;
    const waiting = request(b.getHttpServer())
      .delete('/api/desk/sessions/s3/pending?waitForLease=10000')
      .set(signedIn)
      .then((res) => res);
    void waiting.finally(() => (settled = true));
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(settled).toBe(false);
    release();

    expect(busy.body).toMatchObject({ statusCode: 409, code: 'SessionBusy' });
    expect((await running).body).toMatchObject({ status: 'suspended' });
    const withdrawn = await waiting;
    expect([withdrawn.status, withdrawn.body]).toEqual([200, { cancelled: true, recovered: false }]);
    expect((await store.load('s3'))!.turns.map((t) => t.status)).toEqual(['cancelled']);
    expect([...a.get(Ledger).lines, ...b.get(Ledger).lines]).toEqual([]);
  });

  it("is behind the app's guards like the other routes: refused without the token, and the call still waits", async () => {
    const app = apps[0]!;
    const server = app.getHttpServer();
    const callId = await parked(app, 's4');

    const refused = await Promise.all([
      request(server).delete('/api/desk/sessions/s4/pending'),
      request(server).get('/api/desk/sessions/s4'),
      request(server).post('/api/desk/sessions/s4/messages').send({ message: 'hello' }),
      request(server)
        .post('/api/desk/sessions/s4/decisions')
        .send({ decisions: [{ callId, decision: 'approve' }] }),
    ]);

    expect(refused.map((res) => res.status)).toEqual([403, 403, 403, 403]);
    expect(await pendingOf(app, 's4')).toEqual([expect.objectContaining({ callId })]);
    expect((await request(server).delete('/api/desk/sessions/s4/pending').set(signedIn).expect(200)).body).toEqual({
      cancelled: true,
      recovered: false,
    });
    expect(app.get(Ledger).lines).toEqual([]);
  });
});

const queued =
  (await haveService('redis', 'DELETE pending with the worker queue')) &&
  (await haveService('postgres', 'DELETE pending with the worker queue'));

(queued ? describe : describe.skip)(
  'DELETE <prefix>/sessions/:id/pending with the worker queue (Redis, PostgreSQL)',
  () => {
    const schemas = new PostgresSchemas();
    const stores: PostgresStore[] = [];
    let web: INestApplication;
    let worker: INestApplication;
    let queue: TrellisQueueOptions;

    beforeAll(async () => {
      const schema = schemas.next();
      queue = { url: REDIS_URL, prefix: `${schemas.prefix}_q`, queueName: 'turns', pollMs: 200 };
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
      const keys = await client.keys(`${schemas.prefix}_q:*`);
      if (keys.length > 0) await client.del(...keys);
      await client.quit();
    });

    it('cancels on the worker; a retried DELETE with the same Idempotency-Key gets the same answer, a new one cancelled false', async () => {
      const server = web.getHttpServer();
      await parked(web, 'q1');

      const withdrawn = await request(server)
        .delete('/api/desk/sessions/q1/pending')
        .set(signedIn)
        .set('Idempotency-Key', 'withdraw-1')
        .expect(200);
      const retried = await request(server)
        .delete('/api/desk/sessions/q1/pending')
        .set(signedIn)
        .set('Idempotency-Key', 'withdraw-1')
        .expect(200);
      const fresh = await request(server).delete('/api/desk/sessions/q1/pending').set(signedIn).expect(200);

      expect([withdrawn.body, retried.body, fresh.body]).toEqual([
        { cancelled: true, recovered: false },
        { cancelled: true, recovered: false },
        { cancelled: false, recovered: false },
      ]);
      expect(await pendingOf(web, 'q1')).toEqual([]);
      expect((await stores[1]!.load('q1'))!.turns.map((t) => t.status)).toEqual(['cancelled']);
      const next = await request(server)
        .post('/api/desk/sessions/q1/messages')
        .set(signedIn)
        .send({ message: 'plain' })
        .expect(200);
      expect(next.body).toMatchObject({ status: 'completed', reply: 'done: recorded plain' });
      expect(worker.get(Ledger).lines).toEqual(['plain']);
    });

    it('answers 404 SessionNotFound for a session without messages', async () => {
      const res = await request(web.getHttpServer())
        .delete('/api/desk/sessions/nobody/pending')
        .set(signedIn)
        .expect(404);
      expect(res.body).toMatchObject({ code: 'SessionNotFound' });
    });

    it("answers recovered when an earlier attempt of the cancel job did the cancel and its worker died: HostedSession.cancelPendingOutcome() and the DELETE's body say so", async () => {
      const server = web.getHttpServer();
      const lines = [...worker.get(Ledger).lines];
      await parked(web, 'q2');
      const before = (await stores[1]!.load('q2'))!.revision;
      // The earlier attempt of job 'cancel/q2/second': it recorded the revision it started from,
      // the turn was cancelled (here by another cancel), and its worker died before marking it done.
      const first = await request(server)
        .delete('/api/desk/sessions/q2/pending')
        .set(signedIn)
        .set('Idempotency-Key', 'first')
        .expect(200);
      expect(first.body).toEqual({ cancelled: true, recovered: false });
      const bull = new Queue(queue.queueName!, { connection: { url: REDIS_URL }, prefix: queue.prefix });
      try {
        await bull.add(
          'cancel',
          { kind: 'cancel', agent: 'desk', sessionId: 'q2', key: 'second', startRevision: before },
          { jobId: jobIdOf('cancel', 'q2', 'second'), attempts: 5 },
        );

        // The caller's retry with the job's key gets that job's answer, from the service and over HTTP.
        const outcome = await web
          .get<HostedAgent>(getAgentToken('desk'))
          .session('q2')
          .cancelPendingOutcome({ key: 'second' });
        const retried = await request(server)
          .delete('/api/desk/sessions/q2/pending')
          .set(signedIn)
          .set('Idempotency-Key', 'second')
          .expect(200);

        expect(outcome).toEqual({ cancelled: true, recovered: true });
        expect(retried.body).toEqual({ cancelled: true, recovered: true });
        expect((await stores[1]!.load('q2'))!.turns.map((t) => t.status)).toEqual(['cancelled']);
        expect(worker.get(Ledger).lines).toEqual(lines);
      } finally {
        await bull.close();
      }
    });
  },
);
