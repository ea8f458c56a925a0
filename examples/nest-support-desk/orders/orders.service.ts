import { Injectable } from '@nestjs/common';

/** An order as the orders team stores it. */
export interface Order {
  readonly id: string;
  readonly customer: string;
  readonly status: 'processing' | 'shipped' | 'delivered';
  readonly totalCents: number;
}

const ORDERS: readonly Order[] = [
  { id: 'A1001', customer: 'alice@example.com', status: 'shipped', totalCents: 4_999 },
  { id: 'A1002', customer: 'alice@example.com', status: 'delivered', totalCents: 18_500 },
  { id: 'B2001', customer: 'bob@example.com', status: 'processing', totalCents: 1_250 },
];

/** The orders team's service: an ordinary Nest provider (a repository in a real app). */
@Injectable()
export class OrdersService {
  /** The order with this id, or undefined. */
  find(id: string): Order | undefined {
    return ORDERS.find((order) => order.id === id.toUpperCase());
  }
}
