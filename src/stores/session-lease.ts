import { assertSessionId } from './session-id.js';
import { TrellisError } from '../errors/trellis-error.js';

/**
 * The per-session lease: one writer per session at a time, across processes. A turn or a
 * resume takes the lease before it runs, renews it while it runs and releases it after
 * the checkpoint; a holder that dies simply stops renewing, and the lease expires.
 *
 * Expiry is judged by the store's clock (PostgreSQL's `clock_timestamp()`, the host's
 * clock for SQLite and memory), never the caller's, so instances whose clocks disagree
 * still agree on who holds a lease. A lease is keyed by session id alone and may exist
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
    throw new TrellisError('InvalidOptions', `The lease of session "${sessionId}" needs a holder; got ${JSON.stringify(holder)}`, {
      hint: 'Pass a string unique to this process and turn, e.g. `${hostname}:${pid}:${randomUUID()}`',
      details: { sessionId },
    });
  }
  if (ttlMs === undefined) return;
  if (!Number.isSafeInteger(ttlMs) || ttlMs < 1 || ttlMs > MAX_LEASE_TTL_MS) {
    throw new TrellisError('InvalidOptions', `The lease of session "${sessionId}" cannot last ${String(ttlMs)} ms`, {
      hint: `Pass a whole number of milliseconds from 1 to ${MAX_LEASE_TTL_MS}`,
      details: { sessionId, ttlMs },
    });
  }
}
