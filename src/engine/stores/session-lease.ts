import { assertSessionId } from './session-id.js';
import { TrellisError } from '../../errors/trellis-error.js';

/**
 * The per-session lease: one writer per session at a time, across processes. A turn or a
 * resume takes the lease before it runs, renews it while it runs and releases it after
 * the checkpoint; a holder that dies simply stops renewing, and the lease expires.
 *
 * Expiry is judged by the store's clock (PostgreSQL's `clock_timestamp()`, the clock of the
 * machine that shares a SQLite file, the process's monotonic clock for memory), never the
 * caller's, so instances whose clocks disagree still agree on who holds a lease. A lease whose
 * expiry lies further ahead than its own TTL (plus {@link LEASE_CLOCK_TOLERANCE_MS}) was
 * written by a clock ahead of the store's (a clock set a day ahead, then corrected): it holds
 * nothing, and the next holder takes it. A lease is keyed by session id alone and may exist
 * before the session does: the first turn of a new session is guarded too.
 *
 * @example
 * if (!(await store.acquireLease(sessionId, holder, 30_000))) throw busy(sessionId);
 * try { ...run the turn, renewing every 10 s... } finally { await store.releaseLease(sessionId, holder); }
 */
export interface SessionLease {
  /**
   * Takes the lease for `ttlMs` if it is free, expired, or already held by `holder` (then
   * it is extended).
   *
   * @returns false when another holder has a lease that has not expired.
   */
  acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  /**
   * Extends the lease of `holder` to `ttlMs` from now.
   *
   * @returns false when `holder` lost it: it was released, or expired and taken by another.
   *   A lease that expired but that nobody took is still `holder`'s, and is renewed.
   */
  renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  /** Gives the lease up; does nothing when `holder` does not hold it. */
  releaseLease(sessionId: string, holder: string): Promise<void>;
}

/** The longest lease a store grants: a day. A longer one is a bug, not a plan. */
export const MAX_LEASE_TTL_MS = 86_400_000;

/**
 * How far beyond its TTL from now a lease's expiry may lie and still count: further ahead, the
 * row was written by a clock ahead of the store's, and holds nothing. Small, because processes
 * sharing a SQLite file share one machine's clock; a clock stepped back by more than this lets
 * another writer take a live lease early, and the fence then refuses the first holder's writes.
 */
export const LEASE_CLOCK_TOLERANCE_MS = 2_000;

/** How the store's clock judges a lease row: held, expired, or written by a clock ahead of the store's (it holds nothing). */
export type LeaseState = 'live' | 'expired' | 'ahead';

/** A lease row as an operator sees it (`trellis doctor`). */
export interface LeaseView {
  readonly sessionId: string;
  readonly holder: string;
  /** When it expires by the store's clock (ISO 8601); undefined when the row holds no time at all. */
  readonly expiresAt: string | undefined;
  /** The TTL it was taken or last renewed for ({@link MAX_LEASE_TTL_MS} for a PostgreSQL row written before the TTL was kept). */
  readonly ttlMs: number;
  readonly state: LeaseState;
}

/**
 * A store whose leases an operator can list and clear (`trellis doctor --repair`, `trellis
 * sessions delete`): {@link MemoryStore}, {@link SqliteStore}, {@link PostgresStore}. See {@link canAdministerLeases}.
 */
export interface LeaseAdmin {
  /** Every lease row, judged by the store's clock. */
  listLeases(): Promise<readonly LeaseView[]>;
  /**
   * Deletes the lease of `sessionId` — whoever holds it, live or not, or only while `holder`
   * holds it: a turn still running under it then has its writes refused (`LeaseLost`). Returns
   * the row deleted.
   */
  clearLease(sessionId: string, holder?: string): Promise<LeaseView | undefined>;
}

/**
 * How the store's clock (`now`, epoch ms) judges a lease row: `live` while its expiry is a
 * time ahead of now, but no further than its TTL plus {@link LEASE_CLOCK_TOLERANCE_MS};
 * `ahead` beyond that; `expired` once passed, or when the row holds no time at all.
 */
export function leaseState(expiresAt: unknown, ttlMs: unknown, now: number): LeaseState {
  if (typeof expiresAt !== 'number' || !Number.isFinite(expiresAt) || expiresAt <= now) return 'expired';
  const ttl = typeof ttlMs === 'number' && Number.isFinite(ttlMs) ? ttlMs : 0;
  return expiresAt > now + ttl + LEASE_CLOCK_TOLERANCE_MS ? 'ahead' : 'live';
}

/** Whether `store` lets an operator list and clear its leases. */
export function canAdministerLeases(store: unknown): store is LeaseAdmin {
  const candidate = store as Partial<LeaseAdmin> | undefined;
  return typeof candidate?.listLeases === 'function' && typeof candidate.clearLease === 'function';
}

/**
 * The machine and process a lease holder names, for holders the kernel made
 * (`<hostname>:<pid>:<uuid>`); undefined for any other holder (a queue worker's own, a test's).
 */
export function holderProcess(holder: string): { readonly host: string; readonly pid: number } | undefined {
  const match = /^([^:]+):(\d{1,10}):[0-9a-f-]{36}$/.exec(holder);
  return match ? { host: match[1]!, pid: Number(match[2]) } : undefined;
}

/**
 * The argument checks every store applies to a lease call, so that all stores refuse
 * the same input the same way.
 *
 * @throws TrellisError `InvalidOptions` for an empty id or holder, or a ttl that is not a
 *   whole number of milliseconds between 1 and {@link MAX_LEASE_TTL_MS}.
 */
export function assertLeaseArguments(sessionId: string, holder: string, ttlMs?: number): void {
  if (typeof sessionId !== 'string' || sessionId.length === 0) {
    throw new TrellisError('InvalidOptions', `A session lease needs a session id; got ${JSON.stringify(sessionId)}`, {
      hint: 'Pass the id of the session the turn runs on',
    });
  }
  assertSessionId(sessionId);
  if (typeof holder !== 'string' || holder.length === 0) {
    throw new TrellisError(
      'InvalidOptions',
      `The lease of session "${sessionId}" needs a holder; got ${JSON.stringify(holder)}`,
      {
        hint: 'Pass a string unique to this process and turn, e.g. `${hostname}:${pid}:${randomUUID()}`',
        details: { sessionId },
      },
    );
  }
  if (ttlMs === undefined) return;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_LEASE_TTL_MS) {
    throw new TrellisError('InvalidOptions', `The lease of session "${sessionId}" cannot last ${String(ttlMs)} ms`, {
      hint: `Pass a whole number of milliseconds from 1 to ${MAX_LEASE_TTL_MS}`,
      details: { sessionId, ttlMs },
    });
  }
}
