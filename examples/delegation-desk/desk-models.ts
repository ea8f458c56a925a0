import { ScriptedModel, type ModelRequest, type ScriptedReply } from 'trellis';

const last = (request: ModelRequest) => request.messages.at(-1)!;
const toolResults = (request: ModelRequest) => request.messages.filter((m) => m.role === 'tool');

/** Triage: hands refund questions to the refunds agent, answers anything else itself. */
export const triageModel = () =>
  new ScriptedModel((request): ScriptedReply => {
    const message = last(request);
    if (message.role === 'user' && /refund/i.test(message.content)) {
      return {
        toolCalls: [
          { id: `triage_${request.messages.length}`, name: 'handoff_to_refunds', args: { input: message.content } },
        ],
      };
    }
    return 'Hello! I can help with orders and refunds. What do you need?';
  });

/** Refunds: asks the payments agent (a tool) to pay, reports, and hands back when the customer is done. */
export const refundsModel = () =>
  new ScriptedModel((request): ScriptedReply => {
    const message = last(request);
    if (message.role === 'user' && /thank/i.test(message.content)) {
      return {
        toolCalls: [
          {
            id: `refunds_${request.messages.length}`,
            name: 'handoff_to_triage',
            args: { input: 'The refund is settled.' },
          },
        ],
      };
    }
    const paid = toolResults(request).find((m) => m.name === 'ask_payments');
    if (paid) return `Done: ${paid.content}`;
    return { toolCalls: [{ id: 'refunds_pay', name: 'ask_payments', args: { input: 'Refund order 42: 1999 cents' } }] };
  });

/** Payments: pays the refund it is asked for, then confirms. */
export const paymentsModel = () =>
  new ScriptedModel((request): ScriptedReply => {
    const result = toolResults(request).at(-1);
    if (result) return result.content;
    return {
      toolCalls: [{ id: 'payments_refund', name: 'payments.refund', args: { orderId: '42', amountCents: 1999 } }],
    };
  });
