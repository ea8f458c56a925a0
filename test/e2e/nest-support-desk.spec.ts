import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { SupportDeskModule } from '../../examples/nest-support-desk/app.module.js';
import { RefundsService } from '../../examples/nest-support-desk/refunds/refunds.service.js';

const alice = { Authorization: 'Bearer alice-token' };
const bob = { Authorization: 'Bearer bob-token' };
const sam = { Authorization: 'Bearer sam-token' };

describe('the Nest support desk over HTTP', () => {
  let app: INestApplication;

  beforeEach(async () => {
    const moduleRef = await Test.createTestingModule({ imports: [SupportDeskModule.register()] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
  });

  afterEach(async () => {
    await app.close();
  });

  it('answers a message by calling a tool of the orders plugin, which injects a Nest service', async () => {
    const res = await request(app.getHttpServer())
      .post('/api/support/sessions/s1/messages')
      .set(alice)
      .send({ message: 'Where is order A1001?' })
      .expect(200);
    expect(res.body.status).toBe('completed');
    expect(res.body.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'orders.lookup',
        ok: true,
        value: expect.objectContaining({ id: 'A1001', status: 'shipped' }),
      }),
    ]);
    expect(res.body.reply).toBe('Order A1001 is shipped (total $49.99).');

    const view = await request(app.getHttpServer()).get('/api/support/sessions/s1').set(alice).expect(200);
    expect(view.body.transcript.map((m: { role: string }) => m.role)).toEqual([
      'user',
      'assistant',
      'tool',
      'assistant',
    ]);
    expect(view.body.pending).toEqual([]);
  });

  it('parks a large refund and pays it once a supervisor approves it in a second request', async () => {
    const server = app.getHttpServer();
    const refunds = app.get(RefundsService);
    const first = await request(server)
      .post('/api/support/sessions/r1/messages')
      .set(alice)
      .send({ message: 'Please refund 120.00 on order A1002 because it arrived broken' })
      .expect(200);
    expect(first.body.status).toBe('suspended');
    expect(refunds.issued()).toEqual([]);

    const view = await request(server).get('/api/support/sessions/r1').set(sam).expect(200);
    expect(view.body.pending).toHaveLength(1);
    const callId = view.body.pending[0].callId as string;
    expect(view.body.pending[0]).toMatchObject({
      tool: 'refunds.issue',
      ticket: { message: 'Refund of 12000 cents needs a supervisor' },
    });

    await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(alice)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(403);
    // retry/skip pass the body's validation (they decide calls a crash cut off); the kernel says this call takes neither.
    const retry = await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(sam)
      .send({ decisions: [{ callId, decision: 'retry' }] })
      .expect(400);
    expect(retry.body).toMatchObject({
      code: 'InvalidDecision',
      message: expect.stringContaining("does not allow 'retry'"),
    });
    const decided = await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(sam)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(200);
    expect(decided.body.status).toBe('completed');
    expect(decided.body.reply).toBe('Refunded $120.00 on order A1002.');
    expect(refunds.issued()).toEqual([{ orderId: 'A1002', amountCents: 12_000, reason: 'it arrived broken' }]);

    const again = await request(server)
      .post('/api/support/sessions/r1/decisions')
      .set(sam)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(400);
    expect(again.body.code).toBe('InvalidDecision');
    expect(refunds.issued()).toHaveLength(1);
  });

  it('streams the turn as Server-Sent Events when the client asks for text/event-stream', async () => {
    const res = await request(app.getHttpServer())
      .post('/api/support/sessions/e1/messages')
      .set(alice)
      .set('Accept', 'text/event-stream')
      .send({ message: 'Where is order B2001?' })
      .buffer(true)
      .parse((response, done) => {
        let text = '';
        response.setEncoding('utf8');
        response.on('data', (chunk: string) => (text += chunk));
        response.on('end', () => done(null, text));
      })
      .expect(200);
    expect(res.headers['content-type']).toMatch(/^text\/event-stream/);
    const events = String(res.body)
      .split('\n\n')
      .filter(Boolean)
      .map((block) => ({
        event: /^event: (.+)$/m.exec(block)?.[1],
        data: JSON.parse(/^data: (.+)$/m.exec(block)?.[1] ?? 'null') as Record<string, unknown>,
      }));
    const names = events.map((e) => e.event);
    expect(names[0]).toBe('turn.started');
    expect(names).toEqual(expect.arrayContaining(['tool.started', 'tool.finished', 'model.delta', 'turn.finished']));
    expect(names.at(-1)).toBe('result');
    expect(events.at(-1)!.data).toMatchObject({
      status: 'completed',
      reply: 'Order B2001 is processing (total $12.50).',
    });
  });

  it('rejects a bad body with 400 before any turn runs', async () => {
    const server = app.getHttpServer();
    const empty = await request(server)
      .post('/api/support/sessions/b1/messages')
      .set(alice)
      .send({ message: '' })
      .expect(400);
    expect(JSON.stringify(empty.body.message)).toContain('message should not be empty');
    await request(server).post('/api/support/sessions/b1/messages').set(alice).send({ text: 'hi' }).expect(400);
    const decision = await request(server)
      .post('/api/support/sessions/b1/decisions')
      .set(sam)
      .send({ decisions: [{ callId: 'x', decision: 'maybe' }] })
      .expect(400);
    expect(JSON.stringify(decision.body.message)).toContain('decision must be one of the following values');
    await request(server).get('/api/support/sessions/b1').set(alice).expect(404);
  });

  it('denies a tool to a user whose scopes lack it, and pays nothing', async () => {
    const refunds = app.get(RefundsService);
    const res = await request(app.getHttpServer())
      .post('/api/support/sessions/d1/messages')
      .set(bob)
      .send({ message: 'refund 10.00 on order B2001 because it is late' })
      .expect(200);
    expect(res.body.toolCalls).toEqual([
      expect.objectContaining({
        tool: 'refunds.issue',
        ok: false,
        error: expect.objectContaining({ code: 'AuthDenied' }),
      }),
    ]);
    expect(res.body.reply).toContain('requires the scope(s) refunds:write');
    expect(refunds.issued()).toEqual([]);
    await request(app.getHttpServer()).post('/api/support/sessions/d1/messages').send({ message: 'hi' }).expect(401);
  });
});
