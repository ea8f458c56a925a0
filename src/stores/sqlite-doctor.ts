import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { describeError } from '../errors/describe-error.js';
import { TrellisError } from '../errors/trellis-error.js';
import { SQLITE_MIGRATIONS, schemaVersion } from './sqlite-migrations.js';
import { loadDriver, SqliteStore } from './sqlite-store.js';
import { staleLeases } from './stale-leases.js';

/** One check of {@link diagnoseSqliteStore}: passed, or a problem with how to fix it. */
export interface DoctorFinding {
  readonly check: 'file' | 'integrity' | 'schema' | 'session' | 'lease';
  readonly ok: boolean;
  readonly detail: string;
  /** What to do (a command), for a problem. */
  readonly fix?: string;
}

/** What {@link diagnoseSqliteStore} found; `ok` when no finding is a problem. */
export interface DoctorReport {
  readonly path: string;
  readonly ok: boolean;
  readonly findings: readonly DoctorFinding[];
}

/** Integrity messages shown at most; SQLite can list thousands for one damaged page. */
const MAX_INTEGRITY_LINES = 10;

/**
 * Checks a SQLite session store without changing it: the file opens as SQLite,
 * `PRAGMA integrity_check` passes, the schema version is the one this Trellis writes, and
 * every stored session can be read — each one that cannot is named with the command that
 * removes it. Opens the file read-only; never migrates or repairs.
 */
export async function diagnoseSqliteStore(path: string): Promise<DoctorReport> {
  const findings: DoctorFinding[] = [];
  const report = () => ({ path, ok: findings.every((f) => f.ok), findings });
  if (!existsSync(path)) {
    findings.push({ check: 'file', ok: true, detail: `no store file at ${path} yet (it is created by the first session)` });
    return report();
  }
  // Loaded here, not imported: the root entry exports this function and must not load the driver.
  const Driver = loadDriver();
  let db: Database.Database;
  try {
    db = new Driver(path, { readonly: true, fileMustExist: true });
    db.pragma('schema_version');
  } catch (error) {
    findings.push({ check: 'file', ok: false, detail: `cannot be opened as SQLite: ${describeError(error)}`, fix: 'Restore the file from a backup, or move it away to start with an empty store' });
    return report();
  }
  try {
    findings.push({ check: 'file', ok: true, detail: `opens as SQLite (${path})` });
    findings.push(integrity(db));
    const schema = schemaCheck(db);
    findings.push(schema);
    if (!schema.ok) return report();
    if (schemaVersion(db) < (SQLITE_MIGRATIONS.at(-1)?.version ?? 0)) {
      // The doctor never writes; this Trellis reads only the current layout.
      findings.push({ check: 'session', ok: true, detail: 'sessions are read back once the file is migrated (any command that opens it for writing, or `trellis sessions list`)' });
      return report();
    }
  } finally {
    db.close();
  }
  findings.push(...(await sessionChecks(path)));
  return report();
}

function integrity(db: Database.Database): DoctorFinding {
  let rows: string[];
  try {
    rows = (db.pragma(`integrity_check(${MAX_INTEGRITY_LINES})`) as Record<string, unknown>[]).map((row) => String(Object.values(row)[0]));
  } catch (error) {
    return { check: 'integrity', ok: false, detail: `integrity check could not run: ${describeError(error)}`, fix: 'Restore the file from a backup' };
  }
  if (rows.length === 1 && rows[0] === 'ok') return { check: 'integrity', ok: true, detail: 'integrity check passed' };
  return { check: 'integrity', ok: false, detail: `integrity check failed: ${rows.join('; ')}`, fix: 'Restore the file from a backup; sessions that still read can be kept with sqlite3 .recover' };
}

function schemaCheck(db: Database.Database): DoctorFinding {
  const latest = SQLITE_MIGRATIONS.at(-1)?.version ?? 0;
  let version: number;
  try {
    version = schemaVersion(db);
  } catch (error) {
    return { check: 'schema', ok: false, detail: `the schema version cannot be read: ${describeError(error)}`, fix: 'Restore the file from a backup' };
  }
  if (version === 0) return { check: 'schema', ok: false, detail: 'this is not a Trellis session store (no schema_migrations table)', fix: 'Point the store at the right file' };
  if (version > latest) return { check: 'schema', ok: false, detail: `schema version ${version} was written by a newer Trellis (this one knows up to ${latest})`, fix: 'Upgrade Trellis' };
  if (version < latest) return { check: 'schema', ok: true, detail: `schema version ${version}; it is migrated to ${latest} the next time the store is opened for writing` };
  const missing = ['sessions', 'checkpoints'].filter((table) => !db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?`).get(table));
  if (missing.length > 0) return { check: 'schema', ok: false, detail: `schema version ${version}, but table(s) ${missing.join(', ')} are missing`, fix: 'The file was changed outside Trellis: restore it from a backup' };
  return { check: 'schema', ok: true, detail: `schema version ${version} (current)` };
}

/**
 * Leases that hold a session for a process that is gone (a problem: the session is busy until
 * they expire) or that a clock ahead of this machine's wrote (a problem of that clock, though
 * they hold nothing); expired ones are harmless and only counted. `--repair` clears them all.
 */
function leaseFindings(leases: Parameters<typeof staleLeases>[0]): DoctorFinding[] {
  const stale = staleLeases(leases);
  const findings: DoctorFinding[] = [];
  for (const { kind, why } of stale) {
    if (kind === 'orphaned') findings.push({ check: 'lease', ok: false, detail: why, fix: 'trellis doctor --repair (clears it)' });
    if (kind === 'ahead') findings.push({ check: 'lease', ok: false, detail: why, fix: 'trellis doctor --repair (clears it); check the clock of the host that wrote it' });
  }
  const expired = stale.filter((s) => s.kind === 'expired').length;
  if (expired > 0) findings.push({ check: 'lease', ok: true, detail: `${expired} expired lease(s) left by turns that stopped: harmless (trellis doctor --repair removes them)` });
  const live = leases.length - stale.length;
  if (live > 0) findings.push({ check: 'lease', ok: true, detail: `${live} session(s) leased by a running turn` });
  return findings;
}

async function sessionChecks(path: string): Promise<DoctorFinding[]> {
  const store = new SqliteStore({ path, readonly: true });
  try {
    const sessions = await store.list();
    const findings: DoctorFinding[] = [];
    for (const { id } of sessions) {
      try {
        await store.load(id);
      } catch (error) {
        const message = TrellisError.is(error) ? error.message.split('. ')[0]! : describeError(error);
        findings.push({ check: 'session', ok: false, detail: message, fix: `trellis sessions delete ${id}` });
      }
    }
    const unreadable = findings.length;
    findings.unshift({ check: 'session', ok: unreadable === 0, detail: `${sessions.length - unreadable} of ${sessions.length} stored session(s) read back` });
    findings.push(...leaseFindings(await store.listLeases()));
    return findings;
  } finally {
    await store.close();
  }
}
