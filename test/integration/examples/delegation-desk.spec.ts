import 'reflect-metadata';
import { MemoryStore } from '../../../index.js';
import { createDelegationDesk } from '../../../examples/delegation-desk/desk.js';
import { PaymentsPlugin } from '../../../examples/delegation-desk/payments.plugin.js';

describe('the delegation desk example', () => {
  beforeEach(() => PaymentsPlugin.ledger.paid.splice(0));

  it('hands over, asks a sub-agent, surfaces its approval at the top, pays once, and hands back', async () => {
    const { app, triage } = await createDelegationDesk(new MemoryStore());
    const session = triage.session('desk-1');

    const asked = await session.send('I want a refund for order 42');
    expect(session.activeAgent).toBe('refunds');
    expect(asked.status).toBe('suspended');
    expect(asked.suspended?.map((c) => [c.callId, c.tool, c.path])).toEqual([
      ['refunds_pay/payments_refund', 'payments.refund', ['refunds', 'payments']],
    ]);
    expect(PaymentsPlugin.ledger.paid).toEqual([]);

    const decided = await session.resume({
      decisions: [{ callId: 'refunds_pay/payments_refund', decision: 'approve' }],
    });
    expect(decided.reply).toBe('Done: Refunded 1999 cents for order 42');
    expect(PaymentsPlugin.ledger.paid).toEqual([
      { orderId: '42', amountCents: 1999, key: 'desk-1>payments:0:refunds_pay:0:1:0' },
    ]);
    expect(Object.keys(decided.usage.byAgent ?? {}).sort()).toEqual(['payments', 'refunds', 'triage']);

    const back = await session.send('Thanks, that is all');
    expect(session.activeAgent).toBe('triage');
    expect(back.reply).toMatch(/^Hello!/);
    expect(PaymentsPlugin.ledger.paid).toHaveLength(1);
    await app.stop();
  });
});
