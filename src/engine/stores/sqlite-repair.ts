import { existsSync } from 'node:fs';
import type Database from 'better-sqlite3';
import { describeError } from '../../errors/describe-error.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { schemaVersion } from './sqlite-migrations.js';
import { REBUILDABLE_TABLES, recreateTables, restoreLedger, schemaGaps } from './sqlite-schema.js';
import { loadDriver, SqliteStore } from './sqlite-store.js';
import { staleLeases } from './stale-leases.js';
import type { RepairReport } from './doctor-report.js';

export type { RepairReport } from './doctor-report.js';

/**
 * Repairs what is safe to repair in a SQLite session store (`trellis doctor --repair`), each
 * step only where nothing more can be lost by it:
 *
 * - a lost schema ledger is written again when every table and column is as this Trellis
 *   writes them (so that is the file's version);
 * - a file whose integrity check fails while every table still reads whole (the damage is
 *   in indexes or free pages) is rebuilt: `REINDEX` builds every index anew from its table's
 *   rows, `VACUUM` drops the pages nothing points to;
 * - missing tables that hold no session (leases, turn events, step journals) are recreated empty;
 * - leases that hold a session for nothing, or for a process of this machine that is gone,
 *   are cleared (see `staleLeases`; each only while the same holder has it);
 * - each session that no longer reads is moved aside: its rows, as they were, into the
 *   `quarantine` table, and the session deleted, so its id starts afresh.
 *
 * Opening the file for writing migrates an older one first. Damage it cannot repair safely
 * (data pages, a missing table that held sessions, a file of a newer Trellis) is left as it is,
 * named in `refused`, for `diagnoseSqliteStore` to report with its way out.
 */
export async function repairSqliteStore(path: string): Promise<RepairReport> {
  if (!existsSync(path)) return { path, actions: [] };
  const actions: string[] = [];
  const Driver = loadDriver();
  let db: Database.Database;
  try {
    db = new Driver(path, { fileMustExist: true, timeout: 5000 });
    db.pragma('schema_version');
  } catch (error) {
    return { path, actions, refused: `the file cannot be opened for repair: ${describeError(error)}` };
  }
  try {
    const refused = repairFile(db, Driver, actions);
    if (refused !== undefined) return { path, actions, refused };
  } catch (error) {
    return { path, actions, refused: `repair stopped: ${describeError(error)}` };
  } finally {
    db.close();
  }
  let store: SqliteStore;
  try {
    store = new SqliteStore({ path });
  } catch (error) {
    return { path, actions, refused: `the store cannot be opened for repair: ${describeError(error)}` };
  }
  try {
    for (const { lease, why } of staleLeases(await store.listLeases())) {
      if (await store.clearLease(lease.sessionId, lease.holder)) actions.push(`cleared a lease: ${why}`);
    }
    for (const { id } of await store.list()) {
      const reason = await unreadable(store, id);
      if (reason !== undefined && quarantine(path, Driver, id, reason))
        actions.push(`moved session ${id} aside into the quarantine table (${reason}); the id starts afresh`);
    }
  } finally {
    await store.close();
  }
  return { path, actions };
}

/** The file-level repairs, on a raw connection: the ledger, the integrity rebuild, missing tables. Returns why it stopped, if it did. */
function repairFile(db: Database.Database, Driver: typeof Database, actions: string[]): string | undefined {
  if (
    schemaVersion(db) === 0 &&
    db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'`).get()
  ) {
    if (!restoreLedger(db, Driver))
      return 'the schema ledger is missing and the tables are not all as this Trellis writes them: restore the file from a backup';
    actions.push('wrote the schema ledger again: every table is as this Trellis writes it');
  }
  if (!integrityOk(db)) {
    const damaged = unreadableTables(db);
    if (damaged.length > 0)
      return `pages holding rows of ${damaged.join(', ')} are damaged: restore the file from a backup (sqlite3 ${db.name} .recover salvages what still reads)`;
    try {
      // REINDEX builds each index anew from its table's rows; VACUUM then drops pages nothing points to.
      db.exec('REINDEX');
      db.exec('VACUUM');
    } catch (error) {
      return `the rebuild of its indexes failed (${describeError(error)}): restore the file from a backup (sqlite3 ${db.name} .recover salvages what still reads)`;
    }
    if (!integrityOk(db)) return 'the integrity check still fails after a rebuild: restore the file from a backup';
    actions.push(
      'rebuilt the indexes and the file (REINDEX, VACUUM): every table read whole, so the damage was in indexes or free pages; the integrity check passes now',
    );
  }
  if (schemaVersion(db) === 0) return undefined;
  const { missingTables, missingColumns } = schemaGaps(db, Driver);
  const rebuildable = missingTables.filter((t) => REBUILDABLE_TABLES.has(t));
  if (rebuildable.length > 0 && rebuildable.length === missingTables.length && missingColumns.length === 0) {
    recreateTables(db, Driver, rebuildable);
    actions.push(`recreated the missing table(s) ${rebuildable.join(', ')} empty (they hold no session)`);
  } else if (missingTables.length > 0 || missingColumns.length > 0) {
    return `${[...missingTables.map((t) => `table ${t}`), ...missingColumns.map((c) => `column ${c}`)].join(', ')} missing, which held sessions or records: restore the file from a backup`;
  }
  return undefined;
}

function integrityOk(db: Database.Database): boolean {
  try {
    const rows = db.pragma('integrity_check(1)') as Record<string, unknown>[];
    return rows.length === 1 && Object.values(rows[0]!)[0] === 'ok';
  } catch {
    return false;
  }
}

/** The tables that cannot be read whole, row by row, through the table itself (no index). */
function unreadableTables(db: Database.Database): string[] {
  const tables = (
    db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'`).all() as {
      name: string;
    }[]
  ).map((t) => t.name);
  return tables.filter((name) => {
    try {
      // NOT INDEXED: the rows as the table holds them, however damaged its indexes are.
      for (const _row of db.prepare(`SELECT * FROM "${name.replaceAll('"', '""')}" NOT INDEXED`).iterate()) void _row;
      return false;
    } catch {
      return true;
    }
  });
}

/** Why session `id` does not load, if it does not: its stored rows are damaged (not the file, nor a passing lock). */
async function unreadable(store: SqliteStore, id: string): Promise<string | undefined> {
  try {
    await store.load(id);
    return undefined;
  } catch (error) {
    if (TrellisError.is(error, 'InvalidCheckpoint') || TrellisError.is(error, 'StoreCorrupt'))
      return error.message.split('. ')[0]!;
    throw error;
  }
}

/** Copies the session's rows into `quarantine` and deletes the session, in one transaction; false when it was gone already. */
function quarantine(path: string, Driver: typeof Database, sessionId: string, reason: string): boolean {
  const db = new Driver(path, { fileMustExist: true, timeout: 5000 });
  try {
    db.pragma('foreign_keys = ON');
    return db
      .transaction(() => {
        const rowsOf = (table: string, key: string) =>
          db.prepare(`SELECT * FROM ${table} WHERE ${key} = ?`).all(sessionId);
        const sessions = rowsOf('sessions', 'id');
        if (sessions.length === 0) return false;
        const rows = {
          sessions,
          checkpoints: rowsOf('checkpoints', 'session_id'),
          turn_steps: rowsOf('turn_steps', 'session_id'),
          part_blobs: rowsOf('part_blobs', 'session_id'),
        };
        db.prepare('INSERT INTO quarantine (session_id, reason, rows, quarantined_at) VALUES (?, ?, ?, ?)').run(
          sessionId,
          reason,
          JSON.stringify(rows),
          new Date().toISOString(),
        );
        db.prepare('DELETE FROM sessions WHERE id = ?').run(sessionId);
        return true;
      })
      .immediate();
  } finally {
    db.close();
  }
}
