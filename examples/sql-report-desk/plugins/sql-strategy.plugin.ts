import { Hook, Plugin } from 'trellis/plugin';

/** The rules every turn of the desk plans with. */
export const SQL_RULES = [
  'SQL rules:',
  '- Send exactly one SELECT per db.search call; nothing after the semicolon.',
  '- Tables: customers, products, orders, order_items. Before using a column you have not seen, list them with',
  "  SELECT name FROM pragma_table_info('<table>').",
  "- Money is stored in integer cents (price_cents); divide by 100.0 for display. Count only orders with status = 'paid' as revenue.",
  '- Always ORDER BY something meaningful and add a LIMIT.',
  '- Never invent numbers: every figure in the reply comes from a query result.',
].join('\n');

/** Injects the SQL rules into the instructions once a turn, before the first model call. */
@Plugin({
  name: 'strategy',
  version: '1.0.0',
  owner: 'data-platform',
  description: 'SQL planning rules for the report desk',
  priority: 10,
})
export class SqlStrategyPlugin {
  @Hook('planning.started')
  plan(instructions: string): string {
    return `${instructions}\n\n${SQL_RULES}`;
  }
}
