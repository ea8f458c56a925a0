import { IsInt, IsString, Min } from 'class-validator';
import { Hook, Plugin, suspend, Tool, type ToolCallInfo, type ToolContext } from 'trellis/plugin';

export class RefundInput {
  @IsString() orderId!: string;
  @IsInt() @Min(1) amountCents!: number;
}

/** Where refunds land: the example keeps them in memory; a real one would call the payment provider. */
export class RefundLedger {
  readonly paid: { orderId: string; amountCents: number; key: string }[] = [];
}

/**
 * Pays refunds. Every refund waits for a human (the gate), however deep the agent that asked
 * for it sits: the approval surfaces at the top of the conversation.
 */
@Plugin({ name: 'payments', version: '1.0.0', description: 'Refund payments, each approved by a human' })
export class PaymentsPlugin {
  static ledger = new RefundLedger();

  @Tool({
    name: 'payments.refund',
    description: 'Pays a refund for an order. Use only once the amount is known; a human approves each one.',
    input: RefundInput,
  })
  refund(input: RefundInput, ctx: ToolContext): string {
    PaymentsPlugin.ledger.paid.push({
      orderId: input.orderId,
      amountCents: input.amountCents,
      key: ctx.idempotencyKey,
    });
    return `Refunded ${input.amountCents} cents for order ${input.orderId}`;
  }

  @Hook('tool.gate')
  approve(call: ToolCallInfo) {
    if (call.tool !== 'payments.refund') return undefined;
    return suspend({
      message: `Pay the refund ${JSON.stringify(call.args)}?`,
      allowedDecisions: ['approve', 'reject'],
    });
  }
}
