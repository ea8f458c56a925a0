/** How far one read-only query may go before it is stopped or cut. */
export interface QueryLimits {
  /** Wall-clock time for the whole query; past it the query process is killed. */
  readonly timeoutMs: number;
  /** Rows returned at most; more sets `truncated`. */
  readonly maxRows: number;
  /** Characters of one text cell at most; a longer cell is cut with a note of its length. */
  readonly maxCellChars: number;
  /** UTF-8 bytes of the rows' JSON at most; the row that would cross it is left out. */
  readonly maxResultBytes: number;
}

/** The desk's defaults: generous for reports, small enough for a model's context. */
export const DEFAULT_QUERY_LIMITS: QueryLimits = Object.freeze({
  timeoutMs: 5_000,
  maxRows: 500,
  maxCellChars: 2_000,
  maxResultBytes: 256 * 1024,
});

/** What `db.search` answers: the columns, the rows, and whether (and why) some were left out. */
export interface QueryResult {
  readonly columns: readonly string[];
  readonly rows: readonly Record<string, unknown>[];
  readonly rowCount: number;
  readonly truncated: boolean;
  /** Which limit cut the result: `rows` or `bytes`. Absent when nothing was left out. */
  readonly truncatedBy?: 'rows' | 'bytes';
}
