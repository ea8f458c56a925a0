import type { Database } from 'better-sqlite3';
import { TrellisError } from '../../errors/trellis-error.js';

/** One step of the SQLite schema. `version` numbers are consecutive, starting at 1. */
export interface SqliteMigration {
  readonly version: number;
  readonly name: string;
  /** SQL run once, inside the migration transaction. */
  readonly up: string;
}

/**
 * The schema of {@link SqliteStore}, oldest first. Append new steps; never edit a shipped
 * one, because databases in the field already ran it.
 */
export const SQLITE_MIGRATIONS: readonly SqliteMigration[] = [
  {
    version: 1,
    name: 'create-sessions',
    up: `
      CREATE TABLE sessions (
        id         TEXT PRIMARY KEY,
        agent      TEXT NOT NULL,
        revision   INTEGER NOT NULL,
        state      TEXT NOT NULL,
        suspension TEXT NOT NULL,
        created_at TEXT NOT NULL,
        updated_at TEXT NOT NULL
      );
      CREATE INDEX sessions_by_updated_at ON sessions (updated_at);
      CREATE TABLE messages (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        message    TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
      ) WITHOUT ROWID;
      CREATE TABLE turns (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn_index INTEGER NOT NULL,
        record     TEXT NOT NULL,
        PRIMARY KEY (session_id, turn_index)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 2,
    name: 'turn-events',
    up: `
      CREATE TABLE turn_events (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn_index INTEGER NOT NULL,
        seq        INTEGER NOT NULL,
        event      TEXT NOT NULL,
        PRIMARY KEY (session_id, turn_index, seq)
      ) WITHOUT ROWID;
      CREATE TABLE turn_event_usage (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn_index INTEGER NOT NULL,
        events     INTEGER NOT NULL,
        bytes      INTEGER NOT NULL,
        dropped    INTEGER NOT NULL,
        PRIMARY KEY (session_id, turn_index)
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 3,
    name: 'session-leases',
    // Keyed by session id alone, with no foreign key: the first turn of a session takes
    // the lease before the session row exists. expires_at is epoch milliseconds.
    up: `
      CREATE TABLE session_leases (
        session_id TEXT PRIMARY KEY,
        holder     TEXT NOT NULL,
        expires_at INTEGER NOT NULL
      ) WITHOUT ROWID;
    `,
  },
  {
    version: 4,
    name: 'message-batches',
    // One row per checkpoint instead of one per message: a turn's messages are written by one
    // statement (issue 17, R9). `seq` is the transcript index of the batch's first message;
    // `message_count` on the session row is where the next batch starts, so a checkpoint
    // never looks at earlier batches. A row of the old table becomes a batch of one, copied
    // as text, so a row that was damaged stays damaged (and is reported by the load).
    up: `
      CREATE TABLE message_batches (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        messages   TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
      ) WITHOUT ROWID;
      INSERT INTO message_batches (session_id, seq, messages)
        SELECT session_id, seq, '[' || message || ']' FROM messages;
      ALTER TABLE sessions ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
      UPDATE sessions SET message_count = (SELECT COALESCE(MAX(seq) + 1, 0) FROM messages m WHERE m.session_id = sessions.id);
      DROP TABLE messages;
    `,
  },
  {
    version: 5,
    name: 'fewer-pages-per-checkpoint',
    // Fewer B-tree pages written per checkpoint (docs/performance.md, "What keeps it
    // fast"). The updated_at index goes: only list() orders by it, and
    // list() reads every session anyway. message_batches and turns become rowid tables with
    // the same keys: a new row is appended at the table's end, and the key index holds only
    // the key. As WITHOUT ROWID tables, a row went in by session id, a batch spilled all but
    // ~0.5 KB to an overflow page, and every interior page held copies of whole rows, so their
    // leaves and interior pages split often. Rows are copied as they are, so a damaged row
    // stays damaged (and is reported by the load).
    up: `
      DROP INDEX IF EXISTS sessions_by_updated_at;
      CREATE TABLE message_batches_v5 (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        messages   TEXT NOT NULL,
        PRIMARY KEY (session_id, seq)
      );
      INSERT INTO message_batches_v5 (session_id, seq, messages)
        SELECT session_id, seq, messages FROM message_batches ORDER BY session_id, seq;
      DROP TABLE message_batches;
      ALTER TABLE message_batches_v5 RENAME TO message_batches;
      CREATE TABLE turns_v5 (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        turn_index INTEGER NOT NULL,
        record     TEXT NOT NULL,
        PRIMARY KEY (session_id, turn_index)
      );
      INSERT INTO turns_v5 (session_id, turn_index, record)
        SELECT session_id, turn_index, record FROM turns ORDER BY session_id, turn_index;
      DROP TABLE turns;
      ALTER TABLE turns_v5 RENAME TO turns;
    `,
  },
  {
    version: 6,
    name: 'one-row-per-checkpoint',
    // A checkpoint writes one row: its appended messages and its turn record together, so it
    // touches one B-tree (and its session index) instead of two (docs/performance.md,
    // "What keeps it fast"). A session's rows are read in `id` order (the rowid, which
    // VACUUM keeps), the order they were written in: a new id is above every existing one.
    // `seq` is the transcript index of the row's first message; a checkpoint that appends
    // nothing stores '[]'. The
    // session row counts its turns and keeps the highest turn index, so list() and a checkpoint
    // never count rows. Old rows are copied as text, so a damaged one stays damaged (and is
    // reported by the load): each batch becomes a row without a turn record, then each turn
    // record a row without messages at the end of its session's transcript.
    up: `
      CREATE TABLE checkpoints (
        id         INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        seq        INTEGER NOT NULL,
        turn_index INTEGER,
        record     TEXT,
        messages   TEXT NOT NULL
      );
      INSERT INTO checkpoints (session_id, seq, turn_index, record, messages)
        SELECT session_id, seq, NULL, NULL, messages FROM message_batches ORDER BY session_id, seq;
      INSERT INTO checkpoints (session_id, seq, turn_index, record, messages)
        SELECT t.session_id, s.message_count, t.turn_index, t.record, '[]'
        FROM turns t JOIN sessions s ON s.id = t.session_id ORDER BY t.session_id, t.turn_index;
      CREATE INDEX checkpoints_by_session ON checkpoints (session_id);
      ALTER TABLE sessions ADD COLUMN turn_count INTEGER NOT NULL DEFAULT 0;
      ALTER TABLE sessions ADD COLUMN last_turn_index INTEGER NOT NULL DEFAULT -1;
      UPDATE sessions SET
        turn_count = (SELECT COUNT(*) FROM turns t WHERE t.session_id = sessions.id),
        last_turn_index = (SELECT COALESCE(MAX(turn_index), -1) FROM turns t WHERE t.session_id = sessions.id);
      DROP TABLE message_batches;
      DROP TABLE turns;
    `,
  },
  {
    version: 7,
    name: 'turn-steps',
    // The step journal of a running turn (docs/durable-steps.md): one row per append, its steps as a
    // JSON array, read in `id` (rowid) order; a checkpoint deletes the session's rows.
    up: `
      CREATE TABLE turn_steps (
        id         INTEGER PRIMARY KEY,
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        steps      TEXT NOT NULL
      );
      CREATE INDEX turn_steps_by_session ON turn_steps (session_id);
    `,
  },
  {
    version: 8,
    name: 'audit-log',
    // The approval audit log: append-only (triggers refuse UPDATE and DELETE), each row
    // chained to the one before by its hash (src/engine/stores/audit-chain.ts). No foreign key:
    // entries outlive the sessions they are about.
    up: `
      CREATE TABLE audit_log (
        seq       INTEGER PRIMARY KEY,
        prev_hash TEXT NOT NULL,
        hash      TEXT NOT NULL,
        entry     TEXT NOT NULL
      );
      CREATE TRIGGER audit_log_no_update BEFORE UPDATE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'the Trellis audit log is append-only'); END;
      CREATE TRIGGER audit_log_no_delete BEFORE DELETE ON audit_log
        BEGIN SELECT RAISE(ABORT, 'the Trellis audit log is append-only'); END;
    `,
  },
  {
    version: 9,
    name: 'part-blobs',
    // Image and file bytes over PART_INLINE_BYTES, referred to from the transcript by id.
    up: `
      CREATE TABLE part_blobs (
        session_id TEXT NOT NULL REFERENCES sessions (id) ON DELETE CASCADE,
        id         TEXT NOT NULL,
        data       TEXT NOT NULL,
        PRIMARY KEY (session_id, id)
      );
    `,
  },
  {
    version: 10,
    name: 'lease-ttl',
    // Each lease keeps the TTL it was taken for, so a lease whose expiry lies further ahead than
    // that was written by a clock ahead of this machine's and holds nothing (issue 34). Rows from
    // before keep a day: as long as any lease could be.
    up: `
      ALTER TABLE session_leases ADD COLUMN ttl_ms INTEGER NOT NULL DEFAULT 86400000;
    `,
  },
  {
    version: 11,
    name: 'quarantine',
    // Sessions whose rows no longer read, moved aside by `trellis doctor --repair`: the rows as
    // they were (JSON of each table's rows), so the session id starts afresh and nothing is lost.
    // No foreign key: the session row is gone.
    up: `
      CREATE TABLE quarantine (
        id             INTEGER PRIMARY KEY,
        session_id     TEXT NOT NULL,
        reason         TEXT NOT NULL,
        rows           TEXT NOT NULL,
        quarantined_at TEXT NOT NULL
      );
    `,
  },
  {
    version: 12,
    name: 'budget-counts',
    // Windowed budget counts (tool calls per minute, tokens and cost per window) that every
    // process on the file shares; rows past expires_at (ms since the epoch) are dropped.
    up: `
      CREATE TABLE budget_counts (
        key          TEXT NOT NULL,
        window_start INTEGER NOT NULL,
        count        REAL NOT NULL,
        expires_at   INTEGER NOT NULL,
        PRIMARY KEY (key, window_start)
      ) WITHOUT ROWID;
      CREATE INDEX budget_counts_by_expiry ON budget_counts (expires_at);
    `,
  },
  {
    version: 13,
    name: 'credentials',
    // Small secrets a host keeps beside its sessions (an MCP server's OAuth tokens), by owner and name.
    up: `
      CREATE TABLE credentials (
        owner      TEXT NOT NULL,
        name       TEXT NOT NULL,
        value      TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (owner, name)
      );
    `,
  },
  {
    version: 14,
    name: 'records',
    // Plugins' records that outlive sessions (RecordStore): per namespace, subject and key.
    up: `
      CREATE TABLE records (
        namespace  TEXT NOT NULL,
        subject    TEXT NOT NULL,
        key        TEXT NOT NULL,
        value      TEXT NOT NULL,
        updated_at TEXT NOT NULL,
        PRIMARY KEY (namespace, subject, key)
      ) WITHOUT ROWID;
    `,
  },
];

/** The schema ledger's table: one row per migration run. */
export const LEDGER = `
  CREATE TABLE IF NOT EXISTS schema_migrations (
    version    INTEGER PRIMARY KEY,
    name       TEXT NOT NULL,
    applied_at TEXT NOT NULL
  )`;

/** The highest migration version recorded in `db`, or 0 for a fresh file. */
export function schemaVersion(db: Database): number {
  const ledger = db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'schema_migrations'`).get();
  if (!ledger) return 0;
  const row = db.prepare('SELECT MAX(version) AS version FROM schema_migrations').get() as { version: number | null };
  return row.version ?? 0;
}

/**
 * Brings `db` up to the last of `migrations` in one immediate transaction, so two
 * processes opening the same fresh file do not both migrate it. Refuses a database
 * written by a newer Trellis rather than guess at a schema it does not know.
 *
 * @returns the schema version after migrating.
 */
export function applyMigrations(db: Database, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): number {
  assertOrdered(migrations);
  const latest = migrations.at(-1)?.version ?? 0;
  const migrate = db.transaction(() => {
    const current = schemaVersion(db);
    assertLedger(db, current);
    db.exec(LEDGER);
    assertKnown(db, current, latest);
    const record = db.prepare('INSERT INTO schema_migrations (version, name, applied_at) VALUES (?, ?, ?)');
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      db.exec(migration.up);
      record.run(migration.version, migration.name, new Date().toISOString());
    }
    return latest;
  });
  return migrate.immediate();
}

/**
 * For a read-only connection, which cannot migrate: the file must already be at exactly
 * the version this code knows.
 */
export function assertSchemaCurrent(db: Database, migrations: readonly SqliteMigration[] = SQLITE_MIGRATIONS): number {
  const latest = migrations.at(-1)?.version ?? 0;
  const current = schemaVersion(db);
  assertLedger(db, current);
  assertKnown(db, current, latest);
  if (current < latest) {
    throw new TrellisError(
      'UnsupportedSchema',
      `The Trellis database ${db.name} is at schema version ${current}, older than version ${latest} that this code needs`,
      {
        hint: 'Open it once without `readonly` so the migrations can run',
        details: { path: db.name, version: current, latest },
      },
    );
  }
  return current;
}

/** A file with Trellis's tables but no ledger is not new: migrating it from version 0 would fail on its first table. */
function assertLedger(db: Database, current: number): void {
  if (current > 0 || !db.prepare(`SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'sessions'`).get())
    return;
  throw new TrellisError(
    'StoreSchema',
    `The Trellis database ${db.name} has its tables but no schema_migrations ledger, so its schema version is unknown`,
    {
      hint: 'Run `trellis doctor --repair`: it restores the ledger when every table is as this Trellis writes it; otherwise restore the file from a backup',
      kind: 'system',
      details: { path: db.name },
    },
  );
}

function assertKnown(db: Database, current: number, latest: number): void {
  if (current <= latest) return;
  throw new TrellisError(
    'UnsupportedSchema',
    `The Trellis database ${db.name} is at schema version ${current}, newer than version ${latest} that this code knows`,
    {
      hint: 'Upgrade Trellis to the version that wrote this file, or point the store at another path',
      details: { path: db.name, version: current, latest },
    },
  );
}

function assertOrdered(migrations: readonly SqliteMigration[]): void {
  migrations.forEach((migration, i) => {
    if (migration.version !== i + 1) {
      throw new TrellisError(
        'InvalidOptions',
        `Migration "${migration.name}" has version ${migration.version}; expected ${i + 1}`,
        {
          hint: 'Number migrations consecutively from 1 and only ever append',
          kind: 'system',
        },
      );
    }
  });
}
