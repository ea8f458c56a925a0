import { IsInt, IsNotEmpty, IsString, Matches, Max, Min } from 'class-validator';
import { argsOf, AuthMiddleware, Hook, Middleware, Plugin, suspend, Tool, type ToolCallInfo } from 'trellis';
import { Describe } from 'trellis/plugin';
import { RefundsService, type Refund } from './refunds.service.js';

/** Refunds up to this amount go through without a supervisor. */
export const AUTO_APPROVE_LIMIT_CENTS = 5_000;

/** Input of `refunds.issue`. */
export class IssueRefund {
  @Describe('The order id, e.g. A1001')
  @IsString()
  @Matches(/^[A-Za-z]\d{4}$/)
  orderId!: string;

  @Describe('The amount in cents')
  @IsInt()
  @Min(1)
  @Max(1_000_000)
  amountCents!: number;

  @Describe('Why the customer gets the money back')
  @IsString()
  @IsNotEmpty()
  reason!: string;
}

/**
 * The refunds team's plugin: pays refunds through the module's `RefundsService`. Needs the
 * `refunds:write` scope; a refund over the limit is parked for a supervisor's decision.
 */
@Plugin({
  name: 'refunds',
  version: '1.0.0',
  owner: 'team-payments',
  description: 'Refunds, behind an approval above a limit',
})
@Middleware(AuthMiddleware, { scopes: ['refunds:write'] })
export class RefundsPlugin {
  constructor(private readonly refunds: RefundsService) {}

  @Tool({
    name: 'refunds.issue',
    input: IssueRefund,
    description:
      'Refund money on an order. Use only when the user asks for a refund and gave a reason; not for order lookups.',
  })
  issue(input: IssueRefund): Refund {
    return this.refunds.issue({
      orderId: input.orderId.toUpperCase(),
      amountCents: input.amountCents,
      reason: input.reason,
    });
  }

  @Hook('tool.gate')
  approvalAboveLimit(call: ToolCallInfo) {
    if (call.tool !== 'refunds.issue') return undefined;
    const amount = argsOf<IssueRefund>(call).amountCents;
    if (typeof amount === 'number' && amount <= AUTO_APPROVE_LIMIT_CENTS) return undefined;
    return suspend({
      message: `Refund of ${String(amount)} cents needs a supervisor`,
      allowedDecisions: ['approve', 'reject', 'edit'],
    });
  }
}
