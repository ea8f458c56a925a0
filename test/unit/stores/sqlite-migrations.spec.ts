import Database from 'better-sqlite3';
import { TrellisError } from '../../../src/errors/trellis-error.js';
import {
  applyMigrations,
  SQLITE_MIGRATIONS,
  schemaVersion,
  type SqliteMigration,
} from '../../../src/engine/stores/sqlite-migrations.js';

const first: SqliteMigration = {
  version: 1,
  name: 'create-notes',
  up: 'CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)',
};
const second: SqliteMigration = { version: 2, name: 'add-author', up: 'ALTER TABLE notes ADD COLUMN author TEXT' };

describe('applyMigrations', () => {
  let db: Database.Database;

  beforeEach(() => {
    db = new Database(':memory:');
  });

  afterEach(() => {
    db.close();
  });

  it('brings a fresh database to the last shipped version', () => {
    expect(schemaVersion(db)).toBe(0);

    expect(applyMigrations(db)).toBe(SQLITE_MIGRATIONS.length);

    expect(schemaVersion(db)).toBe(SQLITE_MIGRATIONS.length);
    const tables = db.prepare(`SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name`).pluck().all();
    expect(tables).toEqual([
      'audit_log',
      'budget_counts',
      'checkpoints',
      'credentials',
      'part_blobs',
      'quarantine',
      'records',
      'schema_migrations',
      'session_leases',
      'sessions',
      'turn_event_usage',
      'turn_events',
      'turn_steps',
    ]);
  });

  it('runs only the steps a database has not run yet, once each', () => {
    applyMigrations(db, [first]);
    db.prepare('INSERT INTO notes (body) VALUES (?)').run('kept');

    expect(applyMigrations(db, [first, second])).toBe(2);
    expect(applyMigrations(db, [first, second])).toBe(2);

    expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual([
      { version: 1, name: 'create-notes' },
      { version: 2, name: 'add-author' },
    ]);
    expect(db.prepare('SELECT body, author FROM notes').all()).toEqual([{ body: 'kept', author: null }]);
  });

  it('rolls a failing step back whole, leaving the previous version', () => {
    applyMigrations(db, [first]);
    const broken: SqliteMigration = {
      version: 2,
      name: 'broken',
      up: 'ALTER TABLE notes ADD COLUMN author TEXT; THIS IS NOT SQL',
    };

    expect(() => applyMigrations(db, [first, broken])).toThrow();

    expect(schemaVersion(db)).toBe(1);
    expect(db.prepare('SELECT name FROM pragma_table_info(?)').pluck().all('notes')).toEqual(['id', 'body']);
  });

  it('refuses a database newer than the migrations it is given', () => {
    applyMigrations(db, [first, second]);

    let error: unknown;
    try {
      applyMigrations(db, [first]);
    } catch (e) {
      error = e;
    }

    expect(TrellisError.is(error, 'UnsupportedSchema')).toBe(true);
    expect(schemaVersion(db)).toBe(2);
  });

  it('refuses a list that is not numbered 1, 2, 3…', () => {
    expect(() => applyMigrations(db, [second])).toThrow(/version 2; expected 1/);
    expect(schemaVersion(db)).toBe(0);
  });
});
