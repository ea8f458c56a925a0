import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { SupportDeskModule, type SupportDeskOptions } from '../../examples/nest-support-desk/app.module.js';
import { RefundsService } from '../../examples/nest-support-desk/refunds/refunds.service.js';
import type { PostgresStore } from '../../src/engine/stores/postgres-store.js';
import { PostgresSchemas } from '../support/postgres-schemas.js';
import { haveService, REDIS_URL } from '../support/services.js';

const available =
  (await haveService('redis', 'the Nest support desk on the worker queue')) &&
  (await haveService('postgres', 'the Nest support desk on the worker queue'));

const alice = { Authorization: 'Bearer alice-token' };
const bob = { Authorization: 'Bearer bob-token' };
const sam = { Authorization: 'Bearer sam-token' };

/** The example desk twice, as deployed: a web app that queues the turns and a worker app that runs them. */
(available ? describe : describe.skip)('the Nest support desk on the worker queue', () => {
  const prefix = `trellis_t${process.pid}_${Date.now().toString(36)}`;
  const schemas = new PostgresSchemas();
  const stores: PostgresStore[] = [];
  let web: INestApplication;
  let worker: INestApplication;

  async function desk(options: SupportDeskOptions): Promise<INestApplication> {
    const moduleRef = await Test.createTestingModule({ imports: [SupportDeskModule.register(options)] }).compile();
    const app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    return app;
  }

  beforeAll(async () => {
    const schema = schemas.next();
    for (let i = 0; i < 2; i++) stores.push(await schemas.open(schema));
    const queue = { url: REDIS_URL, prefix, pollMs: 200 };
    worker = await desk({ store: stores[0], queue, worker: true });
    web = await desk({ store: stores[1], queue });
  });

  afterAll(async () => {
    await web?.close();
    await worker?.close();
    for (const store of stores) await store.close().catch(() => undefined);
    await schemas.dropAll();
    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('answers over HTTP with a turn the worker app ran', async () => {
    const res = await request(web.getHttpServer())
      .post('/api/support/sessions/s1/messages')
      .set(alice)
      .send({ message: 'Where is order A1001?' })
      .expect(200);
    expect(res.body).toMatchObject({ status: 'completed', reply: 'Order A1001 is shipped (total $49.99).' });
    expect(res.body.toolCalls).toEqual([expect.objectContaining({ tool: 'orders.lookup', ok: true })]);
    const view = await request(web.getHttpServer()).get('/api/support/sessions/s1').set(alice).expect(200);
    expect(view.body.transcript.map((m: { role: string }) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
  });

  it("parks a large refund, and the supervisor's approval pays it once, on the worker", async () => {
    const server = web.getHttpServer();
    const first = await request(server)
      .post('/api/support/sessions/r1/messages')
      .set(alice)
      .send({ message: 'Please refund 120.00 on order A1002 because it arrived broken' })
      .expect(200);
    expect(first.body.status).toBe('suspended');
    const view = await request(server).get('/api/support/sessions/r1').set(sam).expect(200);
    const callId = view.body.pending[0].callId as string;

    await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(alice)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(403);
    const decided = await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(sam)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(200);
    const again = await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(sam)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(400);

    expect(decided.body).toMatchObject({ status: 'completed', reply: 'Refunded $120.00 on order A1002.' });
    expect(again.body.code).toBe('InvalidDecision');
    expect(worker.get(RefundsService).issued()).toEqual([
      { orderId: 'A1002', amountCents: 12_000, reason: 'it arrived broken' },
    ]);
    expect(web.get(RefundsService).issued()).toEqual([]);
  });

  it("each caller's scopes travel with the job: the worker pays Alice's small refund and denies Bob's", async () => {
    const server = web.getHttpServer();
    const denied = await request(server)
      .post('/api/support/sessions/d1/messages')
      .set(bob)
      .send({ message: 'refund 10.00 on order B2001 because it is late' })
      .expect(200);
    const paid = await request(server)
      .post('/api/support/sessions/d2/messages')
      .set(alice)
      .send({ message: 'refund 10.00 on order B2001 because it is late' })
      .expect(200);

    expect(denied.body.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refunds.issue',
        ok: false,
        error: expect.objectContaining({ code: 'AuthDenied' }),
      }),
    ]);
    expect(paid.body.toolCalls).toEqual([expect.objectContaining({ tool: 'refunds.issue', ok: true })]);
    expect(
      worker
        .get(RefundsService)
        .issued()
        .filter((refund) => refund.orderId === 'B2001'),
    ).toEqual([{ orderId: 'B2001', amountCents: 1000, reason: 'it is late' }]);
  });
});
