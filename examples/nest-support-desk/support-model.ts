import { ScriptedModel, type ChatMessage, type ModelRequest, type ScriptedReply } from 'trellis';

/**
 * The desk's offline model: replies follow the conversation, so the example runs without
 * an API key. "where is order A1001" looks the order up; "refund 40.00 on order A1001
 * because it arrived broken" asks for a refund; a tool's result is put into words.
 */
export function supportModel(): ScriptedModel {
  return new ScriptedModel(supportReply, { name: 'scripted-support' });
}

let calls = 0;

/** The reply to one request. */
export function supportReply(request: ModelRequest): ScriptedReply {
  const { messages } = request;
  const userAt = messages.map((m) => m.role).lastIndexOf('user');
  const question = messages[userAt]?.content ?? '';
  const last = messages.slice(userAt + 1).at(-1);
  if (last?.role === 'tool') return describe(last);
  const order = /\b([A-Za-z]\d{4})\b/.exec(question)?.[1];
  if (!order) return 'Which order is it about? Please give me the order id, e.g. A1001.';
  const refund = /refund\s+(\d+(?:\.\d{1,2})?)/i.exec(question);
  if (refund) {
    const reason = /because\s+(.+)$/i.exec(question)?.[1] ?? 'customer request';
    return {
      toolCalls: [
        {
          id: `call_${++calls}`,
          name: 'refunds.issue',
          args: { orderId: order, amountCents: Math.round(Number(refund[1]) * 100), reason },
        },
      ],
    };
  }
  return { toolCalls: [{ id: `call_${++calls}`, name: 'orders.lookup', args: { id: order } }] };
}

function describe(message: ChatMessage): string {
  const result = parse(message.content);
  if (result.error) return `I could not do that: ${result.error.message}`;
  if (message.name === 'orders.lookup')
    return `Order ${String(result.id)} is ${String(result.status)} (total ${cents(result.totalCents)}).`;
  return `Refunded ${cents(result.amountCents)} on order ${String(result.orderId)}.`;
}

function parse(content: string): Record<string, unknown> & { error?: { message: string } } {
  try {
    return JSON.parse(content) as Record<string, unknown>;
  } catch {
    return { error: { message: content } };
  }
}

function cents(value: unknown): string {
  return typeof value === 'number' ? `$${(value / 100).toFixed(2)}` : 'an unknown amount';
}
