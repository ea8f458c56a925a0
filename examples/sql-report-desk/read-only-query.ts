import type Database from 'better-sqlite3';
import { TrellisError } from 'trellis';

/** What `db.search` answers: the columns, the rows (at most `limit`), and whether more were left out. */
export interface QueryResult {
  readonly columns: readonly string[];
  readonly rows: readonly Record<string, unknown>[];
  readonly rowCount: number;
  readonly truncated: boolean;
}

const SELECT_START = /^\s*(?:--[^\n]*\n\s*|\/\*[\s\S]*?\*\/\s*)*(select|with)\b/i;

/**
 * Runs exactly one read-only SELECT. Anything else — a write, DDL, a PRAGMA, or more than
 * one statement (`SELECT 1; DROP TABLE x`) — is refused with `SqlRefused` before it runs;
 * SQLite's own errors become `SqlError` with the database's message. The connection is
 * read-only as well, so a statement that slipped past these checks still could not write.
 */
export function runReadOnlyQuery(db: Database.Database, sql: string, limit: number): QueryResult {
  const statement = prepareSelect(db, sql);
  const rows: Record<string, unknown>[] = [];
  let truncated = false;
  try {
    for (const row of statement.iterate() as IterableIterator<Record<string, unknown>>) {
      if (rows.length === limit) {
        truncated = true;
        break;
      }
      rows.push(row);
    }
  } catch (error) {
    throw sqlError(error, sql);
  }
  return { columns: statement.columns().map((c) => c.name), rows, rowCount: rows.length, truncated };
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
      throw refused('it holds more than one statement; send exactly one SELECT, without anything after the semicolon', sql);
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
    hint: busy ? 'The database is busy; try again' : "Check table and column names with SELECT name FROM pragma_table_info('<table>')",
    retryable: busy,
    details: { sql },
    cause: error,
  });
}
