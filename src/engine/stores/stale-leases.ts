import { hostname } from 'node:os';
import { holderProcess, type LeaseView } from './session-lease.js';

/** A lease row that holds a session for nothing, or for a holder that is gone, and why. */
export interface StaleLease {
  readonly lease: LeaseView;
  /** `expired`: let go; `ahead`: written by a clock ahead of the store's; `orphaned`: live, but its process on this machine no longer runs. */
  readonly kind: 'expired' | 'ahead' | 'orphaned';
  /** One sentence for an operator. */
  readonly why: string;
}

/**
 * The leases an operator may clear (`trellis doctor --repair`): expired ones and ones written
 * by a clock ahead of the store's (neither holds anything, but they tell of a crash or a clock
 * problem), and live ones whose holder — a process of this machine, by the holder's name — no
 * longer runs, which keep the session busy until they expire. A live lease of a running
 * process, or of a holder on another machine, is never among them. `clock` names the store's
 * clock in the reasons (this machine's for SQLite, the database server's for PostgreSQL).
 */
export function staleLeases(
  leases: readonly LeaseView[],
  host: string = hostname(),
  clock = "this machine's",
): StaleLease[] {
  const stale: StaleLease[] = [];
  for (const lease of leases) {
    if (lease.state === 'expired') {
      stale.push({
        lease,
        kind: 'expired',
        why:
          lease.expiresAt === undefined
            ? `the lease of session ${lease.sessionId} holds no expiry time (a damaged row)`
            : `the lease of session ${lease.sessionId} expired at ${lease.expiresAt}`,
      });
    } else if (lease.state === 'ahead') {
      stale.push({
        lease,
        kind: 'ahead',
        why: `the lease of session ${lease.sessionId} expires at ${lease.expiresAt}, further ahead than its TTL of ${lease.ttlMs} ms: it was written by a clock ahead of ${clock}, and holds nothing`,
      });
    } else {
      const owner = holderProcess(lease.holder);
      if (owner !== undefined && owner.host === host && processGone(owner.pid)) {
        stale.push({
          lease,
          kind: 'orphaned',
          why: `session ${lease.sessionId} is leased until ${lease.expiresAt} by process ${owner.pid} of this machine, which no longer runs: the session is busy until then`,
        });
      }
    }
  }
  return stale;
}

function processGone(pid: number): boolean {
  if (pid === process.pid) return false;
  try {
    process.kill(pid, 0);
    return false;
  } catch (error) {
    // EPERM: it runs, as another user.
    return (error as NodeJS.ErrnoException).code === 'ESRCH';
  }
}
