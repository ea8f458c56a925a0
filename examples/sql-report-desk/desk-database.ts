import { existsSync, mkdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';

/** DI token of the desk's read-only queries (a `ReadOnlyQueries` over the desk database). */
export const DESK_QUERIES = Symbol.for('sql-report-desk.queries');

/** Where the sample database is built on first run, relative to the working directory. */
export const DEFAULT_DESK_DB_PATH = '.trellis/sql-report-desk.db';

/**
 * The committed seed. Next to this module when run from source (ts-node, jest); from
 * `dist/examples/sql-report-desk/` it is three folders up, back in the repository.
 */
export function deskSeedPath(): string {
  const candidates = [
    new URL('./seed.sql', import.meta.url),
    new URL('../../../examples/sql-report-desk/seed.sql', import.meta.url),
  ];
  for (const url of candidates) {
    const path = fileURLToPath(url);
    if (existsSync(path)) return path;
  }
  throw new Error(
    `The SQL report desk seed (seed.sql) was not found; looked at ${candidates.map((u) => fileURLToPath(u)).join(', ')}`,
  );
}

/**
 * Builds the sample database from `seed.sql` unless the file exists. The file is written
 * under a temporary name and renamed, so a reader never sees half a database.
 */
export function ensureDeskDatabase(path: string = DEFAULT_DESK_DB_PATH): string {
  const target = resolve(path);
  if (existsSync(target)) return target;
  mkdirSync(dirname(target), { recursive: true });
  const building = `${target}.${process.pid}.building`;
  rmSync(building, { force: true });
  const db = new Database(building);
  try {
    db.exec(readFileSync(deskSeedPath(), 'utf8'));
  } finally {
    db.close();
  }
  renameSync(building, target);
  return target;
}

/** Opens the sample database read-only, building it first when it is missing. */
export function openDeskDatabase(path: string = DEFAULT_DESK_DB_PATH): Database.Database {
  return new Database(ensureDeskDatabase(path), { readonly: true, fileMustExist: true });
}
