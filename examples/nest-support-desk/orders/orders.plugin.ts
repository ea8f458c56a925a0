import { IsNotEmpty, IsString, Matches } from 'class-validator';
import { AuthMiddleware, Middleware, Plugin, Tool, TrellisError } from 'trellis';
import { Describe } from 'trellis/plugin';
import { OrdersService, type Order } from './orders.service.js';

/** Input of `orders.lookup`. */
export class LookupOrder {
  @Describe('The order id, e.g. A1001')
  @IsString()
  @IsNotEmpty()
  @Matches(/^[A-Za-z]\d{4}$/)
  id!: string;
}

/**
 * The orders team's plugin. Nest builds it with the module's `OrdersService`; Trellis
 * installs it at bootstrap. Every tool needs the `orders:read` scope from the request context.
 */
@Plugin({ name: 'orders', version: '1.0.0', owner: 'team-orders', description: 'Order lookups' })
@Middleware(AuthMiddleware, { scopes: ['orders:read'] })
export class OrdersPlugin {
  constructor(private readonly orders: OrdersService) {}

  @Tool({
    name: 'orders.lookup',
    input: LookupOrder,
    description:
      'Look up one order by its id: status and total. Use when the user asks about an order; not for refunds.',
  })
  lookup(input: LookupOrder): Order {
    const order = this.orders.find(input.id);
    if (!order)
      throw new TrellisError('ToolFailed', `There is no order ${input.id}`, {
        hint: 'Ask the user to check the order id',
      });
    return order;
  }
}
