import { IsInt, IsOptional, IsString, Max, MaxLength, Min } from 'class-validator';
import { LoggingMiddleware, RetryMiddleware } from 'trellis';
import { Describe, Hook, inject, Middleware, Plugin, Tool, type ToolContext } from 'trellis/plugin';
import { DESK_QUERIES } from '../desk-database.js';
import type { QueryResult, ReadOnlyQueries } from '../read-only-query.js';

/** Input of `db.search`. */
export class SearchInput {
  @Describe('Exactly one read-only SELECT statement in the SQLite dialect')
  @IsString()
  @MaxLength(4000)
  sql!: string;

  @Describe('The most rows to return, 1 to 500; default 50')
  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(500)
  limit?: number;
}

/**
 * Read-only SQL over the report desk's database. The connection is opened with
 * `{ readonly: true }` and every query must be one SELECT; writes, DDL and stacked
 * statements come back as a `SqlRefused` error result the model can read. A query runs in a
 * process of its own, killed after 5 s (`SqlTimeout`); rows, cells and bytes are capped. A
 * session's queries run one at a time, so its runaway queries never hold up another session's.
 */
@Plugin({
  name: 'db',
  version: '1.0.0',
  owner: 'data-platform',
  description: 'Read-only SQL over the report desk database',
})
@Middleware(LoggingMiddleware)
@Middleware(RetryMiddleware, { maxRetries: 2, baseDelayMs: 50 })
export class DbPlugin {
  constructor(@inject(DESK_QUERIES) private readonly queries: ReadOnlyQueries) {}

  @Tool({
    name: 'db.search',
    input: SearchInput,
    description:
      'Run one read-only SELECT over the shop database (customers, products, orders, order_items) and get the rows back. ' +
      'Use it to answer questions about the data. Not for changing data, and not for files: use export.csv to save rows.',
  })
  search(input: SearchInput, ctx: ToolContext): Promise<QueryResult> {
    return this.queries.run(input.sql, { maxRows: input.limit ?? 50 }, ctx.sessionId);
  }

  /** Ends the query process with the app. */
  @Hook('app.shutdown')
  close(): void {
    this.queries.close();
  }
}
