import { hostname } from 'node:os';
import { performance } from 'node:perf_hooks';
import { randomUUID } from 'node:crypto';
import { TrellisError } from '../../errors/trellis-error.js';
import type { SessionStore } from '../../engine/stores/session-store.js';
import { leaseLost } from '../../engine/stores/step-journal.js';

/**
 * How long a lease lasts without renewal, unless the app (`leaseTtlMs`) or the turn
 * (`SendOptions.leaseTtlMs`, which a queue worker sets) says otherwise; a holder that died
 * frees the session after this. 10 s: a killed process's turn goes on within ~10 s, and a
 * live writer paused longer than this is fenced (its writes refused, no tool run).
 */
export const LEASE_TTL_MS = 10_000;

/** What is wrong with a lease TTL, as the error to reject with; undefined when nothing is. */
export function leaseTtlProblem(ttl: unknown, where: string): TrellisError | undefined {
  if (ttl === undefined || (Number.isSafeInteger(ttl) && (ttl as number) >= 1_000 && (ttl as number) <= 86_400_000))
    return undefined;
  return new TrellisError(
    'InvalidOptions',
    `${where}: leaseTtlMs must be a whole number of milliseconds from 1,000 to 86,400,000, got ${String(ttl)}`,
    { hint: 'Pass e.g. leaseTtlMs: 10000, or leave it out for 10 s' },
  );
}

/** The store side of the one-writer-per-session lease. */
export interface LeaseStore {
  acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean>;
  releaseLease(sessionId: string, holder: string): Promise<void>;
}

/** The store's lease operations, or undefined for a store without leases (its turns run unleased). */
export function leasesOf(store: SessionStore | undefined): LeaseStore | undefined {
  const candidate = store as Partial<LeaseStore> | undefined;
  return typeof candidate?.acquireLease === 'function' &&
    typeof candidate.renewLease === 'function' &&
    typeof candidate.releaseLease === 'function'
    ? (candidate as LeaseStore)
    : undefined;
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
  return new TrellisError(
    'InvalidOptions',
    `${where}: waitForLease must be a number of milliseconds (0 or more), got ${got}`,
    {
      hint: 'e.g. { waitForLease: 5000 }, or leave it out to fail at once with SessionBusy when another writer holds the session',
    },
  );
}

/** Who holds a lease: this process, told apart from others on the same store (`<hostname>:<pid>:<uuid>`, as `holderProcess` reads it). */
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
  /**
   * Before a step with an effect outside the store (a tool run): nothing to wait for while the
   * lease was renewed recently enough to be certainly held (by this process's monotonic clock,
   * which a pause of the process cannot fool); otherwise renews it first, and rejects with
   * `LeaseLost` when another holder took it meanwhile.
   */
  ensure(): Promise<void> | undefined;
}

/** Of the TTL, how much a holder counts on after a renewal started: the rest covers clock drift and the request's own time. */
const TRUSTED_SHARE = 0.8;

/** The lease held by {@link withLease}: when it was last known held, and whether it was lost. */
class Holding implements HeldLease {
  released = false;
  #trustedUntil: number;
  #lost = false;

  constructor(
    private readonly lease: LeaseStore,
    private readonly sessionId: string,
    readonly holder: string,
    since: number,
    private readonly ttlMs: number,
  ) {
    this.#trustedUntil = since + ttlMs * TRUSTED_SHARE;
  }

  ensure(): Promise<void> | undefined {
    if (this.#lost) return Promise.reject(leaseLost(this.sessionId));
    if (performance.now() < this.#trustedUntil) return undefined;
    return this.renew().then((held) => {
      if (!held) throw leaseLost(this.sessionId);
    });
  }

  /** Renews the lease; true while this holder still has it. */
  async renew(): Promise<boolean> {
    const since = performance.now();
    const renewed = await this.lease.renewLease(this.sessionId, this.holder, this.ttlMs);
    if (renewed) this.#trustedUntil = Math.max(this.#trustedUntil, since + this.ttlMs * TRUSTED_SHARE);
    else this.#lost = true;
    return renewed;
  }
}

/**
 * Runs `work` holding the session's lease: taken before anything runs (or waited for, up
 * to `waitMs`), renewed while it runs, released after unless the work's last checkpoint
 * released it. A second writer gets `SessionBusy` before anything of its turn has run. A
 * store without leases ({@link leasesOf} answers undefined) runs `work` as it is, without
 * calling this.
 */
export async function withLease<T>(
  lease: LeaseStore,
  sessionId: string,
  holder: string,
  waitMs: number | undefined,
  work: (held: HeldLease) => Promise<T>,
  onLost: (error: TrellisError) => void,
  ttlMs: number = LEASE_TTL_MS,
): Promise<T> {
  const since = await acquire(lease, sessionId, holder, waitMs ?? 0, ttlMs);
  const held = new Holding(lease, sessionId, holder, since, ttlMs);
  const renewal = setInterval(() => {
    held.renew().then(
      (renewed) => {
        if (!renewed && !held.released)
          onLost(
            new TrellisError(
              'SessionBusy',
              `The lease on session '${sessionId}' was lost while a turn ran (it expired and another writer took it)`,
              { hint: "The turn's checkpoint will be refused if the other writer saved first; retry it" },
            ),
          );
      },
      (error: unknown) => {
        if (!held.released)
          onLost(
            TrellisError.is(error)
              ? error
              : new TrellisError('SessionBusy', `Renewing the lease on session '${sessionId}' failed`, {
                  cause: error,
                  kind: 'system',
                }),
          );
      },
    );
  }, ttlMs / 3);
  renewal.unref();
  try {
    return await work(held);
  } finally {
    clearInterval(renewal);
    if (!held.released) await lease.releaseLease(sessionId, holder).catch(() => undefined);
  }
}

/** Takes the lease, waiting up to `waitMs`; returns when (on the monotonic clock) the attempt that got it started. */
async function acquire(
  lease: LeaseStore,
  sessionId: string,
  holder: string,
  waitMs: number,
  ttlMs: number,
): Promise<number> {
  const deadline = Date.now() + waitMs;
  let pause = 10;
  for (;;) {
    const attempt = performance.now();
    if (await lease.acquireLease(sessionId, holder, ttlMs)) return attempt;
    if (Date.now() >= deadline) {
      throw new TrellisError(
        'SessionBusy',
        `Session '${sessionId}' is busy: another writer holds its lease${waitMs > 0 ? ` (waited ${waitMs} ms)` : ''}; nothing was run`,
        {
          hint: 'Retry when its turn has ended, or pass { waitForLease: ms } to wait for it',
          retryable: true,
          details: { sessionId },
        },
      );
    }
    await new Promise((resolve) => setTimeout(resolve, Math.min(pause, Math.max(1, deadline - Date.now()))));
    pause = Math.min(pause * 2, 250);
  }
}
