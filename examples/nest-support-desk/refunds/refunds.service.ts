import { Injectable } from '@nestjs/common';

/** A refund that was paid out. */
export interface Refund {
  readonly orderId: string;
  readonly amountCents: number;
  readonly reason: string;
}

/** The refunds team's service: pays refunds out (a payment provider in a real app). */
@Injectable()
export class RefundsService {
  readonly #issued: Refund[] = [];

  /** Pays a refund out and returns it. */
  issue(refund: Refund): Refund {
    this.#issued.push(refund);
    return refund;
  }

  /** Every refund paid out so far. */
  issued(): readonly Refund[] {
    return [...this.#issued];
  }
}
