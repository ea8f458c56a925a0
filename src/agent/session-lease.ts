import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { TrellisError } from '../errors/trellis-error.js';
import type { SessionStore } from '../stores/session-store.js';

/** How long a lease lasts without renewal; a holder that died frees the session after this. */
export const LEASE_TTL_MS = 30_000;

/** The store side of the one-writer-per-session lease (DESIGN §8). */
export interface LeaseStore {
  acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  releaseLease(sessionId: string, holder: string): Promise<void>;
}

/** The store's lease operations, or undefined for a store without leases (its turns run unleased). */
export function leasesOf(store: SessionStore | undefined): LeaseStore | undefined {
  const candidate = store as Partial<LeaseStore> | undefined;
  return typeof candidate?.acquireLease === 'function' && typeof candidate.renewLease === 'function' && typeof candidate.releaseLease === 'function' ? (candidate as LeaseStore) : undefined;
}

let host: string | undefined;

/**
 * What is wrong with a `waitForLease` option, as the `InvalidOptions` error to reject with;
 * undefined when it is absent or a finite number of milliseconds, 0 or more. (NaN would
 * otherwise wait forever on a busy session.) `where` names the call, e.g. `send()`.
 */
export function waitForLeaseProblem(waitMs: unknown, where: string): TrellisError | undefined {
  if (waitMs === undefined || (typeof waitMs === 'number' && Number.isFinite(waitMs) && waitMs >= 0)) return undefined;
  const got = typeof waitMs === 'number' ? String(waitMs) : (JSON.stringify(waitMs) ?? typeof waitMs);
  return new TrellisError('InvalidOptions', `${where}: waitForLease must be a number of milliseconds (0 or more), got ${got}`, {
    hint: 'e.g. { waitForLease: 5000 }, or leave it out to fail at once with SessionBusy when another writer holds the session',
  });
}

/** Who holds a lease: this process, told apart from others on the same store. */
export function leaseHolder(): string {
  // os.hostname() is a system call: once per process, not once per session.
  host ??= hostname();
  return `${host}:${process.pid}:${randomUUID()}`;
}

/**
 * A lease held for one piece of work. `released` is set once the work's last checkpoint gave
 * it up (`SessionCheckpoint.releaseLease`, on a store that `releasesLeaseOnCheckpoint`): then
 * {@link withLease} neither releases it again nor reports its renewal as lost.
 */
export interface HeldLease {
  readonly holder: string;
  released: boolean;
}

/**
 * Runs `work` holding the session's lease: taken before anything runs (or waited for, up
 * to `waitMs`), renewed while it runs, released after unless the work's last checkpoint
 * released it. A second writer gets `SessionBusy` before anything of its turn has run. A
 * store without leases ({@link leasesOf} answers undefined) runs `work` as it is, without
 * calling this.
 */
export async function withLease<T>(lease: LeaseStore, sessionId: string, holder: string, waitMs: number | undefined, work: (held: HeldLease) => Promise<T>, onLost: (error: TrellisError) => void): Promise<T> {
  await acquire(lease, sessionId, holder, waitMs ?? 0);
  const held: HeldLease = { holder, released: false };
  const renewal = setInterval(() => {
    lease.renewLease(sessionId, holder, LEASE_TTL_MS).then(
      (renewed) => {
        if (!renewed && !held.released) onLost(new TrellisError('SessionBusy', `The lease on session '${sessionId}' was lost while a turn ran (it expired and another writer took it)`, { hint: 'The turn\'s checkpoint will be refused if the other writer saved first; retry it' }));
      },
      (error: unknown) => {
        if (!held.released) onLost(TrellisError.is(error) ? error : new TrellisError('SessionBusy', `Renewing the lease on session '${sessionId}' failed`, { cause: error, kind: 'system' }));
      },
    );
  }, LEASE_TTL_MS / 3);
  renewal.unref();
  try {
    return await work(held);
  } finally {
    clearInterval(renewal);
    if (!held.released) await lease.releaseLease(sessionId, holder).catch(() => undefined);
  }
}

async function acquire(lease: LeaseStore, sessionId: string, holder: string, waitMs: number): Promise<void> {
  const deadline = Date.now() + waitMs;
  let pause = 10;
  for (;;) {
    if (await lease.acquireLease(sessionId, holder, LEASE_TTL_MS)) return;
    if (Date.now() >= deadline) {
      throw new TrellisError('SessionBusy', `Session '${sessionId}' is busy: another writer holds its lease${waitMs > 0 ? ` (waited ${waitMs} ms)` : ''}; nothing was run`, {
        hint: 'Retry when its turn has ended, or pass { waitForLease: ms } to wait for it',
        retryable: true,
        details: { sessionId },
      });
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(1, deadline - Date.now()))));
    pause = Math.min(pause * 2, 250);
  }
}
