import { existsSync } from 'node:fs';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { describeError } from '../../errors/describe-error.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { SQLITE_MIGRATIONS, schemaVersion } from './sqlite-migrations.js';
import { loadDriver, SqliteStore } from './sqlite-store.js';
import { leaseFindings, type DoctorFinding, type DoctorReport } from './doctor-report.js';
import { REBUILDABLE_TABLES, schemaGaps } from './sqlite-schema.js';

export type { DoctorFinding, DoctorReport } from './doctor-report.js';

const REBUILD_OR_RESTORE =
  'trellis doctor --repair (rebuilds the indexes when every table still reads whole: the damage is in indexes or free pages); else restore the file from a backup (sqlite3 .recover salvages what still reads)';

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
    findings.push({
      check: 'file',
      ok: true,
      detail: `no store file at ${path} yet (it is created by the first session)`,
    });
    return report();
  }
  // Loaded here, not imported: the root entry exports this function and must not load the driver.
  const Driver = loadDriver();
  let db: Database.Database;
  try {
    db = new Driver(path, { readonly: true, fileMustExist: true });
    db.pragma('schema_version');
  } catch (error) {
    const code = String((error as { code?: unknown })?.code ?? '');
    const fix = /^SQLITE_(READONLY|CANTOPEN)/.test(code)
      ? `Give this user read and write access to ${dirname(path)} (SQLite in WAL mode keeps -wal and -shm files beside the database, even to read it), or copy the file to a folder that has it`
      : 'Restore the file from a backup, or move it away to start with an empty store';
    findings.push({ check: 'file', ok: false, detail: `cannot be opened as SQLite: ${describeError(error)}`, fix });
    return report();
  }
  try {
    findings.push({ check: 'file', ok: true, detail: `opens as SQLite (${path})` });
    const intact = integrity(db);
    findings.push(intact);
    const schema = schemaCheck(db, Driver);
    findings.push(schema);
    if (!schema.ok) return report();
    if (!intact.ok) {
      // A damaged page fails the loads that read it: that is the file's damage, not the sessions'.
      findings.push({ check: 'session', ok: true, detail: 'sessions are read back once the integrity check passes' });
      return report();
    }
    if (schemaVersion(db) < (SQLITE_MIGRATIONS.at(-1)?.version ?? 0)) {
      // The doctor never writes; this Trellis reads only the current layout.
      findings.push({
        check: 'session',
        ok: true,
        detail:
          'sessions are read back once the file is migrated (any command that opens it for writing, or `trellis sessions list`)',
      });
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
    rows = (db.pragma(`integrity_check(${MAX_INTEGRITY_LINES})`) as Record<string, unknown>[]).map((row) =>
      String(Object.values(row)[0]),
    );
  } catch (error) {
    return {
      check: 'integrity',
      ok: false,
      detail: `integrity check could not run: ${describeError(error)}`,
      fix: REBUILD_OR_RESTORE,
    };
  }
  if (rows.length === 1 && rows[0] === 'ok') return { check: 'integrity', ok: true, detail: 'integrity check passed' };
  return {
    check: 'integrity',
    ok: false,
    detail: `integrity check failed: ${rows.join('; ')}`,
    fix: REBUILD_OR_RESTORE,
  };
}

function schemaCheck(db: Database.Database, Driver: typeof Database): DoctorFinding {
  const latest = SQLITE_MIGRATIONS.at(-1)?.version ?? 0;
  let version: number;
  try {
    version = schemaVersion(db);
  } catch (error) {
    return {
      check: 'schema',
      ok: false,
      detail: `the schema version cannot be read: ${describeError(error)}`,
      fix: 'Restore the file from a backup',
    };
  }
  if (version === 0 && db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'`).get()) {
    return {
      check: 'schema',
      ok: false,
      detail:
        'the tables of a Trellis store are here, but not its schema ledger (schema_migrations): its version is unknown',
      fix: 'trellis doctor --repair (restores the ledger when every table is as this Trellis writes it); else restore the file from a backup',
    };
  }
  if (version === 0)
    return {
      check: 'schema',
      ok: false,
      detail: 'this is not a Trellis session store (no schema_migrations table)',
      fix: 'Point the store at the right file',
    };
  if (version > latest)
    return {
      check: 'schema',
      ok: false,
      detail: `schema version ${version} was written by a newer Trellis (this one knows up to ${latest})`,
      fix: 'Upgrade Trellis',
    };
  if (version < latest)
    return {
      check: 'schema',
      ok: true,
      detail: `schema version ${version}; it is migrated to ${latest} the next time the store is opened for writing`,
    };
  const { missingTables, missingColumns } = schemaGaps(db, Driver);
  if (missingTables.length === 0 && missingColumns.length === 0)
    return { check: 'schema', ok: true, detail: `schema version ${version} (current)` };
  const missing = [...missingTables.map((t) => `table ${t}`), ...missingColumns.map((c) => `column ${c}`)].join(', ');
  const rebuildable = missingColumns.length === 0 && missingTables.every((t) => REBUILDABLE_TABLES.has(t));
  return {
    check: 'schema',
    ok: false,
    detail: `schema version ${version}, but ${missing} ${missingTables.length + missingColumns.length === 1 ? 'is' : 'are'} missing: the file was changed outside Trellis`,
    fix: rebuildable
      ? `trellis doctor --repair (recreates ${missingTables.join(', ')} empty: ${missingTables.length === 1 ? 'it holds' : 'they hold'} no session)`
      : 'Restore the file from a backup (or move it away to start with an empty store)',
  };
}

async function sessionChecks(path: string): Promise<DoctorFinding[]> {
  let store: SqliteStore;
  try {
    store = new SqliteStore({ path, readonly: true });
  } catch (error) {
    return [
      {
        check: 'session',
        ok: false,
        detail: `the sessions cannot be read: ${describeError(error)}`,
        fix: 'Restore the file from a backup',
      },
    ];
  }
  try {
    const sessions = await store.list();
    const findings: DoctorFinding[] = [];
    for (const { id } of sessions) {
      try {
        await store.load(id);
      } catch (error) {
        const message = TrellisError.is(error) ? error.message.split('. ')[0]! : describeError(error);
        findings.push({
          check: 'session',
          ok: false,
          detail: message,
          fix: `trellis sessions delete ${id}, or trellis doctor --repair (moves it aside into the quarantine table, keeping its rows)`,
        });
      }
    }
    const unreadable = findings.length;
    findings.unshift({
      check: 'session',
      ok: unreadable === 0,
      detail: `${sessions.length - unreadable} of ${sessions.length} stored session(s) read back`,
    });
    findings.push(...leaseFindings(await store.listLeases()));
    const quarantined = quarantinedSessions(path);
    if (quarantined > 0)
      findings.push({
        check: 'quarantine',
        ok: true,
        detail: `${quarantined} unreadable session(s) moved aside by trellis doctor --repair: their rows are kept as they were in the quarantine table`,
      });
    return findings;
  } catch (error) {
    return [
      {
        check: 'session',
        ok: false,
        detail: `the sessions cannot be read: ${describeError(error)}`,
        fix: 'Restore the file from a backup',
      },
    ];
  } finally {
    await store.close();
  }
}

function quarantinedSessions(path: string): number {
  const db = new (loadDriver())(path, { readonly: true, fileMustExist: true });
  try {
    return (db.prepare('SELECT COUNT(*) AS n FROM quarantine').get() as { n: number }).n;
  } finally {
    db.close();
  }
}
