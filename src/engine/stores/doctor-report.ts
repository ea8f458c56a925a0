import { staleLeases } from './stale-leases.js';
import type { LeaseView } from './session-lease.js';

/** One check of `trellis doctor` (`diagnoseSqliteStore`, `diagnosePostgresStore`): passed, or a problem with how to fix it. */
export interface DoctorFinding {
  readonly check: 'file' | 'server' | 'integrity' | 'schema' | 'session' | 'lease' | 'quarantine';
  readonly ok: boolean;
  readonly detail: string;
  /** What to do (a command), for a problem. */
  readonly fix?: string;
}

/** What a store's check found; `ok` when no finding is a problem. */
export interface DoctorReport {
  /** The SQLite file, or the PostgreSQL server and schema (never a password). */
  readonly path: string;
  readonly ok: boolean;
  readonly findings: readonly DoctorFinding[];
}

/** What a store's repair (`trellis doctor --repair`) did, one sentence each; `refused` names damage it left alone, and why. */
export interface RepairReport {
  readonly path: string;
  readonly actions: readonly string[];
  readonly refused?: string;
}

/**
 * Leases that hold a session for a process that is gone (a problem: the session is busy until
 * they expire) or that a clock ahead of the store's wrote (a problem of that clock, though they
 * hold nothing); expired ones are harmless and only counted. `--repair` clears them all.
 * `clock` names the store's clock in the messages.
 */
export function leaseFindings(leases: readonly LeaseView[], clock?: string): DoctorFinding[] {
  const stale = staleLeases(leases, undefined, clock);
  const findings: DoctorFinding[] = [];
  for (const { kind, why } of stale) {
    if (kind === 'orphaned')
      findings.push({ check: 'lease', ok: false, detail: why, fix: 'trellis doctor --repair (clears it)' });
    if (kind === 'ahead')
      findings.push({
        check: 'lease',
        ok: false,
        detail: why,
        fix: 'trellis doctor --repair (clears it); check the clock of the host that wrote it',
      });
  }
  const expired = stale.filter((s) => s.kind === 'expired').length;
  if (expired > 0)
    findings.push({
      check: 'lease',
      ok: true,
      detail: `${expired} expired lease(s) left by turns that stopped: harmless (trellis doctor --repair removes them)`,
    });
  const live = leases.length - stale.length;
  if (live > 0) findings.push({ check: 'lease', ok: true, detail: `${live} session(s) leased by a running turn` });
  return findings;
}
