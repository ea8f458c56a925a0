import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { SupportDeskModule } from '../../../examples/nest-support-desk/app.module.js';
import { RefundsService } from '../../../examples/nest-support-desk/refunds/refunds.service.js';

const alice = { Authorization: 'Bearer alice-token' };
const sam = { Authorization: 'Bearer sam-token' };

/** The body text of a decision whose `edit` args nest `depth` levels (arrays, or objects). */
function deepEdit(callId: string, depth: number, kind: 'arrays' | 'objects'): string {
  const inner =
    kind === 'arrays' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth);
  return `{"decisions":[{"callId":"${callId}","decision":"edit","args":{"orderId":"A1002","amountCents":100,"reason":"x","extra":${inner}}}]}`;
}

describe('the sessions API refuses deep and prototype-keyed bodies with 400', () => {
  let app: INestApplication;
  let callId: string;

  beforeEach(async () => {
    const ref = await Test.createTestingModule({ imports: [SupportDeskModule.register()] }).compile();
    app = ref.createNestApplication({ logger: false });
    await app.init();
    const first = await request(app.getHttpServer())
      .post('/api/support/sessions/r1/messages')
      .set(alice)
      .send({ message: 'Please refund 120.00 on order A1002 because it arrived broken' })
      .expect(200);
    callId = first.body.suspended[0].callId as string;
  });

  afterEach(async () => {
    await app.close();
  });

  it.each([
    [5_000, 'arrays'],
    [20_000, 'arrays'],
    [5_000, 'objects'],
    [33, 'objects'],
  ] as const)(
    'edit args nested %i deep (%s): 400 InvalidOptions, the call still waits, nothing paid',
    async (depth, kind) => {
      const res = await request(app.getHttpServer())
        .post('/api/support/sessions/r1/decisions')
        .set(sam)
        .set('Content-Type', 'application/json')
        .send(deepEdit(callId, depth, kind));
      expect([res.status, res.body.code]).toEqual([400, 'InvalidOptions']);
      expect(res.body.message).toMatch(/nested deeper than 32 levels/);
      const view = await request(app.getHttpServer()).get('/api/support/sessions/r1').set(alice).expect(200);
      expect(view.body.pending).toHaveLength(1);
      expect(app.get(RefundsService).issued()).toEqual([]);
    },
  );

  const protoBodies: ReadonlyArray<readonly [string, string, (id: string) => string]> = (
    ['__proto__', 'constructor', 'prototype'] as const
  ).flatMap((key) => [
    [
      `${key} beside message`,
      'messages',
      () => `{"message":"Where is order A1001?","${key}":{"isAdmin":true}}`,
    ] as const,
    [
      `${key} in a decision`,
      'decisions',
      (id: string) => `{"decisions":[{"callId":"${id}","decision":"approve","${key}":{"x":1}}]}`,
    ] as const,
    [
      `${key} in edit args`,
      'decisions',
      (id: string) =>
        `{"decisions":[{"callId":"${id}","decision":"edit","args":{"orderId":"A1002","amountCents":100,"reason":"x","${key}":{"x":1}}}]}`,
    ] as const,
  ]);

  it.each(protoBodies)('%s: 400 InvalidOptions naming the key, nothing runs', async (_name, route, body) => {
    const res = await request(app.getHttpServer())
      .post(`/api/support/sessions/r1/${route}`)
      .set(route === 'messages' ? alice : sam)
      .set('Content-Type', 'application/json')
      .send(body(callId));
    expect([res.status, res.body.code]).toEqual([400, 'InvalidOptions']);
    expect(res.body.message).toMatch(/property (__proto__|constructor|prototype) should not exist/);
    const view = await request(app.getHttpServer()).get('/api/support/sessions/r1').set(alice).expect(200);
    expect(view.body.pending).toHaveLength(1);
    expect(app.get(RefundsService).issued()).toEqual([]);
  });

  it("a body inside the limits still works: an edit with 10-deep extra args is refused by the tool's DTO, not the pipe", async () => {
    const res = await request(app.getHttpServer())
      .post('/api/support/sessions/r1/decisions')
      .set(sam)
      .set('Content-Type', 'application/json')
      .send(deepEdit(callId, 10, 'objects'));
    expect(res.status).toBe(400);
    expect(res.body.code).toBe('InvalidDecision');
  });
});
