/**
 * The desk's own error codes, added to Trellis's closed code union by declaration merging
 * (as every plugin package with codes of its own does; see docs/middleware.md), so
 * `new TrellisError('SqlRefused', …)` is checked like the framework's codes:
 * `SqlRefused` (a statement that is not exactly one read-only SELECT), `SqlError` (SQLite
 * rejected the query, or its process died) and `SqlTimeout` (the query ran past its limit).
 */
declare module 'trellis' {
  interface TrellisErrorCodes {
    SqlRefused: true;
    SqlError: true;
    SqlTimeout: true;
  }
}

export {};
