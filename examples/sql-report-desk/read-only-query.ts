import type Database from 'better-sqlite3';
import { TrellisError } from 'trellis';
import { DEFAULT_QUERY_LIMITS, type QueryLimits, type QueryResult } from './query-limits.js';
import { DEFAULT_QUERY_PROCESSES, QueryPool } from './query-pool.js';
import type {} from './sql-error-codes.js';

export type { QueryResult } from './query-limits.js';

const SELECT_START = /^\s*(?:--[^\n]*\n\s*|\/\*[\s\S]*?\*\/\s*)*(select|with)\b/i;

/**
 * Runs exactly one read-only SELECT. Anything else — a write, DDL, a PRAGMA, or more than
 * one statement (`SELECT 1; DROP TABLE x`) — is refused with `SqlRefused` before it runs;
 * SQLite's own errors become `SqlError` with the database's message. Both connections
 * are read-only, so a statement that slipped past these checks still could not write.
 *
 * The statement is checked here (preparing runs nothing) and run in a query process of a
 * {@link QueryPool}, under {@link QueryLimits}: a query past `timeoutMs` is killed
 * (`SqlTimeout`), rows stop at `maxRows` and `maxResultBytes`, long text is cut and blobs are
 * summarised. Each session's queries run one at a time on a process of their own (up to
 * `processes`, default 4), so one session's runaway query never holds up another's.
 */
export class ReadOnlyQueries {
  readonly #pool: QueryPool;

  constructor(
    private readonly db: Database.Database,
    private readonly limits: QueryLimits = DEFAULT_QUERY_LIMITS,
    options: { readonly processes?: number } = {},
  ) {
    this.#pool = new QueryPool(db.name, options.processes ?? DEFAULT_QUERY_PROCESSES);
  }

  /**
   * Runs `sql` under the limits, `overrides` (e.g. a caller's row limit) taking precedence,
   * after the earlier queries of `session` (the session id; one shared queue when absent).
   */
  async run(sql: string, overrides: Partial<QueryLimits> = {}, session = ''): Promise<QueryResult> {
    prepareSelect(this.db, sql);
    const limits = { ...this.limits, ...overrides };
    const reply = await this.#pool.run(
      session,
      { sql, maxRows: limits.maxRows, maxCellChars: limits.maxCellChars, maxResultBytes: limits.maxResultBytes },
      limits.timeoutMs,
    );
    if (!reply.ok) throw sqlError(Object.assign(new Error(reply.message), { code: reply.code }), sql);
    const truncated = reply.truncatedBy !== undefined;
    return {
      columns: reply.columns,
      rows: reply.rows,
      rowCount: reply.rows.length,
      truncated,
      ...(truncated ? { truncatedBy: reply.truncatedBy } : {}),
    };
  }

  /** Stops the query processes; the next `run` starts others. */
  close(): void {
    this.#pool.close();
  }
}

function prepareSelect(db: Database.Database, sql: string): Database.Statement {
  if (!SELECT_START.test(sql)) {
    throw refused('only a SELECT (or WITH … SELECT) statement is allowed', sql);
  }
  let statement: Database.Statement;
  try {
    statement = db.prepare(sql);
  } catch (error) {
    // Matched by message: better-sqlite3 throws a RangeError of its own realm, so `instanceof` is unreliable.
    if (/more than one statement/.test(String((error as { message?: unknown } | null)?.message))) {
      throw refused(
        'it holds more than one statement; send exactly one SELECT, without anything after the semicolon',
        sql,
      );
    }
    throw sqlError(error, sql);
  }
  if (!statement.readonly || !statement.reader) throw refused('it would change the database or returns no rows', sql);
  return statement;
}

function refused(why: string, sql: string): TrellisError {
  return new TrellisError('SqlRefused', `Query refused: ${why}`, {
    hint: 'db.search is read-only: rewrite it as one SELECT statement',
    details: { sql },
  });
}

function sqlError(error: unknown, sql: string): TrellisError {
  const message = error instanceof Error ? error.message : String(error);
  const code = (error as { code?: unknown }).code;
  const busy = code === 'SQLITE_BUSY' || code === 'SQLITE_LOCKED';
  return new TrellisError('SqlError', `SQLite rejected the query: ${message}`, {
    hint: busy
      ? 'The database is busy; try again'
      : "Check table and column names with SELECT name FROM pragma_table_info('<table>')",
    retryable: busy,
    details: { sql },
    cause: error,
  });
}
