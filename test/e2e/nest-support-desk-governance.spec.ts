import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import request from 'supertest';
import { MemoryStore } from 'trellis';
import { verifyAuditChain } from 'trellis/governance';
import { SupportDeskModule } from '../../examples/nest-support-desk/app.module.js';
import { RefundsService } from '../../examples/nest-support-desk/refunds/refunds.service.js';

const alice = { Authorization: 'Bearer alice-token' };
const dana = { Authorization: 'Bearer dana-token' };
const sam = { Authorization: 'Bearer sam-token' };

describe('the Nest support desk: two owning teams and the refunds approval policy', () => {
  let app: INestApplication;
  afterEach(async () => app?.close());

  it('refuses a decision by a non-approver (403 ApprovalRefused), pays once a refund approver decides, and audits both', async () => {
    const store = new MemoryStore();
    const moduleRef = await Test.createTestingModule({ imports: [SupportDeskModule.register({ store })] }).compile();
    app = moduleRef.createNestApplication({ logger: false });
    await app.init();
    const server = app.getHttpServer();
    const first = await request(server)
      .post('/api/support/sessions/g1/messages')
      .set(alice)
      .send({ message: 'Please refund 120.00 on order A1002 because it arrived broken' })
      .expect(200);
    expect(first.body.status).toBe('suspended');
    const callId = first.body.suspended[0].callId as string;
    expect(first.body.toolCalls).toEqual([]);

    const refused = await request(server)
      .post('/api/support/sessions/g1/decisions')
      .set(dana)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(403);
    expect(refused.body).toMatchObject({
      code: 'ApprovalRefused',
      message: expect.stringContaining("policy 'refunds' allows roles refund-approver; 'dana' has team-lead"),
    });
    expect(app.get(RefundsService).issued()).toEqual([]);

    const decided = await request(server)
      .post('/api/support/sessions/g1/decisions')
      .set(sam)
      .send({ decisions: [{ callId, decision: 'approve' }] })
      .expect(200);
    expect(decided.body.status).toBe('completed');
    expect(decided.body.toolCalls[0]).toMatchObject({
      tool: 'refunds.issue',
      plugin: 'refunds',
      owner: 'team-payments',
    });
    expect(decided.body.usage.byOwner['team-payments'].toolCalls).toBe(1);

    const log = await store.readAudit();
    expect(log.map((r) => [r.entry.outcome, r.entry.approver?.id, r.entry.policy])).toEqual([
      ['refused', 'dana', 'refunds'],
      ['approved', 'sam', 'refunds'],
    ]);
    expect(verifyAuditChain(log).ok).toBe(true);
  });
});
