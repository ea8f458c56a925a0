import { TrellisError } from '../../errors/trellis-error.js';
import { describeError } from '../../errors/describe-error.js';

/** Where a {@link PostgresStore} points, for messages: never the password. */
export interface PostgresTarget {
  /** `host:port/database`, or `a host-supplied pool` when the host passed one. */
  readonly server: string;
  readonly schema: string;
}

// SQLSTATE classes (https://www.postgresql.org/docs/current/errcodes-appendix.html).
const CONNECTION_CODES = new Set([
  'ECONNREFUSED',
  'ECONNRESET',
  'ENOTFOUND',
  'EAI_AGAIN',
  'ETIMEDOUT',
  'EHOSTUNREACH',
  'EPIPE',
]);
const RETRYABLE_STATES = new Set(['40001', '40P01', '55P03', '57014']);

/**
 * Turns a driver error from `operation` into a `TrellisError` with a code and a hint:
 * `StoreUnavailable` (retryable) when the server cannot be reached or went away,
 * `UnsupportedSchema` when Trellis's tables are missing, `StoreFailed` otherwise (retryable
 * for serialization failures, deadlocks and lock timeouts). A `TrellisError` passes through.
 */
export function postgresError(error: unknown, operation: string, target: PostgresTarget): TrellisError {
  if (TrellisError.is(error)) return error;
  const code = driverCode(error);
  const text = describeError(error);
  const details = { operation, server: target.server, schema: target.schema, ...(code ? { driverCode: code } : {}) };
  const where = `PostgreSQL (${target.server}, schema "${target.schema}")`;
  if (
    (code && (CONNECTION_CODES.has(code) || code.startsWith('08') || code.startsWith('57P'))) ||
    /Connection terminated|timeout exceeded when trying to connect|Cannot use a pool after calling end/i.test(text)
  ) {
    return new TrellisError('StoreUnavailable', `Cannot ${operation}: ${where} is not reachable (${text})`, {
      hint: 'Check that the server is running and that the URL, network and credentials are right; the operation may be retried',
      kind: 'system',
      retryable: true,
      details,
      cause: error,
    });
  }
  if (code === '42P01' || code === '3F000') {
    return new TrellisError(
      'UnsupportedSchema',
      `Cannot ${operation}: the Trellis tables are missing from ${where} (${text})`,
      {
        hint: 'The schema was dropped or never migrated; open the store again with PostgresStore.open() so its migrations run',
        kind: 'system',
        details,
        cause: error,
      },
    );
  }
  if (code === '28P01' || code === '28000' || code === '42501') {
    return new TrellisError(
      'StoreUnavailable',
      `Cannot ${operation}: ${where} refused the credentials or the privilege (${text})`,
      {
        hint: 'Grant the role USAGE and CREATE on the schema and read/write on its tables, or use another role',
        kind: 'system',
        details,
        cause: error,
      },
    );
  }
  const retryable = code !== undefined && RETRYABLE_STATES.has(code);
  return new TrellisError('StoreFailed', `Cannot ${operation} in ${where}: ${text}`, {
    hint: retryable
      ? 'A concurrent transaction got in the way; retry the operation'
      : code?.startsWith('53')
        ? 'The server is out of a resource (disk, memory or connections); free some and retry'
        : 'See the driver error in `cause`',
    kind: 'system',
    retryable,
    details,
    cause: error,
  });
}

function driverCode(error: unknown): string | undefined {
  if (typeof error !== 'object' || error === null) return undefined;
  const code = (error as { code?: unknown }).code;
  return typeof code === 'string' ? code : undefined;
}
