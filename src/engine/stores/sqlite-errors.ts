import { TrellisError } from '../../errors/trellis-error.js';

/** The codes a SQLite store failure maps to, each with what to do about it. */
export type StoreErrorCode =
  'StoreFull' | 'StoreBusy' | 'StoreReadonly' | 'StoreCorrupt' | 'StoreSchema' | 'StoreIO' | 'StoreFailed';

interface Mapping {
  readonly code: StoreErrorCode;
  readonly retryable: boolean;
  readonly what: string;
  readonly hint: (path: string) => string;
}

const DOCTOR = 'Check the file with: trellis doctor';

/** By SQLite's primary result code (better-sqlite3 reports extended codes, e.g. `SQLITE_IOERR_WRITE`). */
const BY_CODE: Readonly<Record<string, Mapping>> = {
  SQLITE_FULL: {
    code: 'StoreFull',
    retryable: true,
    what: 'the disk (or the database size limit) is full',
    hint: (path) => `Free disk space where ${path} lives, then try again`,
  },
  SQLITE_BUSY: {
    code: 'StoreBusy',
    retryable: true,
    what: 'the database is locked',
    hint: () =>
      'another process holds a lock on the file for longer than the 5 s wait; try again, or stop that process',
  },
  SQLITE_LOCKED: {
    code: 'StoreBusy',
    retryable: true,
    what: 'a table is locked',
    hint: () => 'another process or connection holds the lock; try again',
  },
  SQLITE_READONLY: {
    code: 'StoreReadonly',
    retryable: false,
    what: 'the database cannot be written',
    hint: (path) => `Check the permissions of ${path} and its folder (and its -wal and -shm files)`,
  },
  SQLITE_CORRUPT: {
    code: 'StoreCorrupt',
    retryable: false,
    what: 'the database file is damaged',
    hint: () => `${DOCTOR}; restore the file from a backup if it reports damage`,
  },
  SQLITE_NOTADB: {
    code: 'StoreCorrupt',
    retryable: false,
    what: 'the file is not a SQLite database',
    hint: () => `${DOCTOR}; point the store at another file, or move this one away`,
  },
  SQLITE_IOERR: {
    code: 'StoreIO',
    retryable: true,
    what: 'the disk reported an I/O error',
    hint: (path) =>
      `Check the disk holding ${path}: full, failing, or over a file-size limit (ulimit -f); then try again`,
  },
  SQLITE_CANTOPEN: {
    code: 'StoreIO',
    retryable: false,
    what: 'the file cannot be opened',
    hint: (path) => `Check that ${path} and its folder exist and are accessible`,
  },
  SQLITE_PERM: {
    code: 'StoreReadonly',
    retryable: false,
    what: 'access to the file was denied',
    hint: (path) => `Check the permissions of ${path}`,
  },
};

const MISSING_SCHEMA: Mapping = {
  code: 'StoreSchema',
  retryable: false,
  what: 'the schema is not what Trellis wrote',
  hint: () => `${DOCTOR}; the file was changed outside Trellis`,
};

/**
 * A driver error of a SQLite store as a {@link TrellisError}: `StoreFull`, `StoreBusy`,
 * `StoreReadonly`, `StoreCorrupt`, `StoreSchema` (a missing table or column), `StoreIO`,
 * or `StoreFailed`, with the driver's code and message in `details`, and a hint. A
 * `TrellisError` passes through unchanged.
 */
export function sqliteStoreError(error: unknown, operation: string, path: string): TrellisError {
  if (TrellisError.is(error)) return error;
  const sqliteCode =
    typeof (error as { code?: unknown })?.code === 'string' ? (error as { code: string }).code : undefined;
  const message = error instanceof Error ? error.message : String(error);
  const mapping =
    (sqliteCode && BY_CODE[primary(sqliteCode)]) ||
    (/no such (table|column)/i.test(message) ? MISSING_SCHEMA : undefined);
  const code = mapping?.code ?? 'StoreFailed';
  const what = mapping?.what ?? 'the database reported an error';
  return new TrellisError(
    code,
    `The session store at ${path} failed to ${operation}: ${what} (${sqliteCode ?? 'error'}: ${message})`,
    {
      hint: mapping?.hint(path) ?? DOCTOR,
      kind: 'system',
      retryable: mapping?.retryable ?? false,
      details: { path, operation, sqliteCode, driverMessage: message },
      cause: error,
    },
  );
}

/** `SQLITE_IOERR_WRITE` → `SQLITE_IOERR`. */
function primary(code: string): string {
  const parts = code.split('_');
  return parts.length > 2 ? parts.slice(0, 2).join('_') : code;
}

/** Runs a store operation, turning what the driver throws into {@link sqliteStoreError}. */
export function guardStore<T>(operation: string, path: string, work: () => T): T {
  try {
    return work();
  } catch (error) {
    throw sqliteStoreError(error, operation, path);
  }
}
