import type { PoolClient } from 'pg';
import { TrellisError } from '../../errors/trellis-error.js';

/** One step of the PostgreSQL schema. `version` numbers are consecutive, starting at 1. */
export interface PostgresMigration {
  readonly version: number;
  readonly name: string;
  /** SQL run once, inside the migration transaction; `schema` is the quoted schema name. */
  readonly up: (schema: string) => string;
}

/**
 * The schema of {@link PostgresStore}, oldest first. Append new steps; never edit a shipped
 * one, because databases in the field already ran it. JSON is kept as `json` (the text as
 * written, checked for syntax) rather than `jsonb`, which refuses `\u0000` in strings that
 * a model may well produce.
 */
export const POSTGRES_MIGRATIONS: readonly PostgresMigration[] = [
  {
    version: 1,
    name: 'create-sessions',
    up: (s) => `
      CREATE TABLE ${s}.sessions (
        id         text PRIMARY KEY,
        agent      text NOT NULL,
        revision   integer NOT NULL,
        state      json NOT NULL,
        suspension json NOT NULL,
        created_at timestamptz NOT NULL,
        updated_at timestamptz NOT NULL
      );
      CREATE INDEX sessions_by_updated_at ON ${s}.sessions (updated_at DESC, id);
      CREATE TABLE ${s}.messages (
        session_id text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
        seq        integer NOT NULL,
        message    json NOT NULL,
        PRIMARY KEY (session_id, seq)
      );
      CREATE TABLE ${s}.turns (
        session_id text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
        turn_index integer NOT NULL,
        record     json NOT NULL,
        PRIMARY KEY (session_id, turn_index)
      );`,
  },
  {
    version: 2,
    name: 'session-leases',
    // No foreign key: the first turn of a session takes the lease before the row exists.
    up: (s) => `
      CREATE TABLE ${s}.session_leases (
        session_id text PRIMARY KEY,
        holder     text NOT NULL,
        expires_at timestamptz NOT NULL
      );`,
  },
  {
    version: 3,
    name: 'turn-steps',
    // The step journal of a running turn (docs/durable-steps.md): one row per append, in id order; a
    // checkpoint deletes the session's rows.
    up: (s) => `
      CREATE TABLE ${s}.turn_steps (
        id         bigserial PRIMARY KEY,
        session_id text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
        steps      json NOT NULL
      );
      CREATE INDEX turn_steps_by_session ON ${s}.turn_steps (session_id, id);`,
  },
  {
    version: 4,
    name: 'audit-log',
    // The approval audit log: append-only (a trigger refuses UPDATE, DELETE and TRUNCATE),
    // each row chained to the one before by its hash. Entries outlive their sessions.
    up: (s) => `
      CREATE TABLE ${s}.audit_log (
        seq       bigint PRIMARY KEY,
        prev_hash text NOT NULL,
        hash      text NOT NULL,
        entry     json NOT NULL
      );
      CREATE FUNCTION ${s}.audit_log_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN RAISE EXCEPTION 'the Trellis audit log is append-only'; END $$;
      CREATE TRIGGER audit_log_no_change BEFORE UPDATE OR DELETE ON ${s}.audit_log
        FOR EACH ROW EXECUTE FUNCTION ${s}.audit_log_append_only();
      CREATE TRIGGER audit_log_no_truncate BEFORE TRUNCATE ON ${s}.audit_log
        FOR EACH STATEMENT EXECUTE FUNCTION ${s}.audit_log_append_only();`,
  },
  {
    version: 5,
    name: 'part-blobs',
    // Image and file bytes over PART_INLINE_BYTES, referred to from the transcript by id.
    up: (s) => `
      CREATE TABLE ${s}.part_blobs (
        session_id text NOT NULL REFERENCES ${s}.sessions (id) ON DELETE CASCADE,
        id         text NOT NULL,
        data       text NOT NULL,
        PRIMARY KEY (session_id, id)
      );`,
  },
  {
    version: 6,
    name: 'credentials',
    // Small secrets a host keeps beside its sessions (an MCP server's OAuth tokens), by owner and name.
    up: (s) => `
      CREATE TABLE ${s}.credentials (
        owner      text NOT NULL,
        name       text NOT NULL,
        value      text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (owner, name)
      );
    `,
  },
  {
    version: 7,
    name: 'records',
    // Plugins' records that outlive sessions (RecordStore): per namespace, subject and key.
    up: (s) => `
      CREATE TABLE ${s}.records (
        namespace  text NOT NULL,
        subject    text NOT NULL,
        key        text NOT NULL,
        value      text NOT NULL,
        updated_at timestamptz NOT NULL DEFAULT clock_timestamp(),
        PRIMARY KEY (namespace, subject, key)
      );`,
  },
  {
    version: 8,
    name: 'lease-ttl',
    // The TTL a lease was taken or renewed for: an expiry further ahead than it was written by
    // a clock ahead of the server's as it is now, and holds nothing. Null in rows written before.
    up: (s) => `ALTER TABLE ${s}.session_leases ADD COLUMN ttl_ms integer;`,
  },
];

/**
 * Brings `schema` up to the last of `migrations` in one transaction, under an advisory
 * lock so that instances starting together migrate it once. Creates the schema when it is
 * missing. Refuses a schema written by a newer Trellis rather than guess at it.
 *
 * @param schema the unquoted schema name (already checked by the store).
 * @returns the schema version after migrating.
 */
export async function applyPostgresMigrations(
  client: PoolClient,
  schema: string,
  migrations: readonly PostgresMigration[] = POSTGRES_MIGRATIONS,
): Promise<number> {
  assertOrdered(migrations);
  const latest = migrations.at(-1)?.version ?? 0;
  const quoted = quoteIdentifier(schema);
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`trellis.migrate:${schema}`]);
    // Checked first, so a role without CREATE on the database can use a schema made for it.
    const exists = await client.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
    if (exists.rowCount === 0) await client.query(`CREATE SCHEMA ${quoted}`);
    await client.query(`CREATE TABLE IF NOT EXISTS ${quoted}.schema_migrations (
      version    integer PRIMARY KEY,
      name       text NOT NULL,
      applied_at timestamptz NOT NULL DEFAULT clock_timestamp()
    )`);
    const { rows } = await client.query<{ version: number | null }>(
      `SELECT MAX(version) AS version FROM ${quoted}.schema_migrations`,
    );
    const current = rows[0]?.version ?? 0;
    assertKnown(schema, current, latest);
    for (const migration of migrations) {
      if (migration.version <= current) continue;
      await client.query(migration.up(quoted));
      await client.query(`INSERT INTO ${quoted}.schema_migrations (version, name) VALUES ($1, $2)`, [
        migration.version,
        migration.name,
      ]);
    }
    await client.query('COMMIT');
    return latest;
  } catch (error) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw error;
  }
}

/** `"name"`, with embedded quotes doubled, as PostgreSQL quotes identifiers. */
export function quoteIdentifier(name: string): string {
  return `"${name.replaceAll('"', '""')}"`;
}

function assertKnown(schema: string, current: number, latest: number): void {
  if (current <= latest) return;
  throw new TrellisError(
    'UnsupportedSchema',
    `The Trellis schema "${schema}" in PostgreSQL is at version ${current}, newer than version ${latest} that this code knows`,
    {
      hint: 'Upgrade Trellis to the version that wrote it on every instance, or point the store at another schema',
      details: { schema, version: current, latest },
    },
  );
}

function assertOrdered(migrations: readonly PostgresMigration[]): void {
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
