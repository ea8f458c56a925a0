import type Database from 'better-sqlite3';
import { applyMigrations, LEDGER, SQLITE_MIGRATIONS } from './sqlite-migrations.js';

/** One table of the current schema: its `CREATE` statement, columns and indexes. */
interface TableShape {
  readonly sql: string;
  readonly columns: readonly string[];
  readonly indexes: readonly string[];
}

/**
 * Tables whose rows are short-lived or records of what happened, never a session itself:
 * recreated empty by `trellis doctor --repair` when missing, since nothing more is lost.
 * (A missing `sessions`, `checkpoints`, `part_blobs` or `audit_log` is not: the first three
 * held sessions, and an empty audit log recreated would hide that it was removed.)
 */
export const REBUILDABLE_TABLES: ReadonlySet<string> = new Set([
  'session_leases',
  'turn_events',
  'turn_event_usage',
  'turn_steps',
  'quarantine',
]);

let current: ReadonlyMap<string, TableShape> | undefined;

/** The tables a file of the current version has, read from a private in-memory database the migrations built. */
function expectedSchema(Driver: typeof Database): ReadonlyMap<string, TableShape> {
  if (current !== undefined) return current;
  const db = new Driver(':memory:');
  try {
    applyMigrations(db);
    current = readSchema(db, true);
  } finally {
    db.close();
  }
  return current;
}

function readSchema(db: Database.Database, withSql: boolean): Map<string, TableShape> {
  const tables = db
    .prepare(
      `SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%' AND name <> 'schema_migrations'`,
    )
    .all() as { name: string; sql: string }[];
  const shapes = new Map<string, TableShape>();
  for (const { name, sql } of tables) {
    const columns = (db.prepare('SELECT name FROM pragma_table_info(?)').all(name) as { name: string }[]).map(
      (c) => c.name,
    );
    const indexes = withSql
      ? (
          db
            .prepare(
              `SELECT sql FROM sqlite_master WHERE type IN ('index', 'trigger') AND tbl_name = ? AND sql IS NOT NULL`,
            )
            .all(name) as { sql: string }[]
        ).map((i) => i.sql)
      : [];
    shapes.set(name, { sql, columns, indexes });
  }
  return shapes;
}

/** How a file at the current version differs from what this Trellis writes: tables, and columns of the tables present. */
export interface SchemaGaps {
  readonly missingTables: readonly string[];
  readonly missingColumns: readonly string[];
}

/** What `db` lacks of the current schema (extra tables and columns are no concern). */
export function schemaGaps(db: Database.Database, Driver: typeof Database): SchemaGaps {
  const expected = expectedSchema(Driver);
  const actual = readSchema(db, false);
  const missingTables: string[] = [];
  const missingColumns: string[] = [];
  for (const [name, shape] of expected) {
    const found = actual.get(name);
    if (found === undefined) missingTables.push(name);
    else
      for (const column of shape.columns) if (!found.columns.includes(column)) missingColumns.push(`${name}.${column}`);
  }
  return { missingTables, missingColumns };
}

/** Creates the named tables empty, as the current schema has them, with their indexes and triggers, in one transaction. */
export function recreateTables(db: Database.Database, Driver: typeof Database, names: readonly string[]): void {
  const expected = expectedSchema(Driver);
  db.transaction(() => {
    for (const name of names) {
      const shape = expected.get(name)!;
      db.exec(shape.sql);
      for (const sql of shape.indexes) db.exec(sql);
    }
  }).immediate();
}

/**
 * Writes the schema ledger of a file that lost it but whose tables and columns are all those of
 * the current version (so that is its version); false, writing nothing, when they are not.
 */
export function restoreLedger(db: Database.Database, Driver: typeof Database): boolean {
  const gaps = schemaGaps(db, Driver);
  if (gaps.missingTables.length > 0 || gaps.missingColumns.length > 0) return false;
  db.transaction(() => {
    db.exec(LEDGER);
    const record = db.prepare('INSERT OR IGNORE INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    const now = new Date().toISOString();
    for (const migration of SQLITE_MIGRATIONS) record.run(migration.version, migration.name, now);
  }).immediate();
  return true;
}
