import { createRequire } from 'node:module';
import type pg from 'pg';
import { describeError } from '../../errors/describe-error.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { leaseFindings, type DoctorFinding, type DoctorReport, type RepairReport } from './doctor-report.js';
import { postgresError } from './postgres-errors.js';
import { POSTGRES_MIGRATIONS, quoteIdentifier } from './postgres-migrations.js';
import { DEFAULT_POSTGRES_SCHEMA, PostgresStore } from './postgres-store.js';
import { staleLeases } from './stale-leases.js';

/** Which PostgreSQL store `trellis doctor` checks: a URL (a pool of its own, ended after) or the host's pool; the schema defaults to `trellis`. */
export type PostgresDoctorTarget = (
  { readonly url: string; readonly pool?: never } | { readonly pool: pg.Pool; readonly url?: never }
) & { readonly schema?: string };

/** The tables of the current schema version; one missing was dropped outside Trellis. */
const TABLES = [
  'sessions',
  'messages',
  'turns',
  'session_leases',
  'turn_steps',
  'audit_log',
  'part_blobs',
  'credentials',
  'records',
] as const;

const SERVER_CLOCK = "the database server's clock as it reads now";

/**
 * Checks a PostgreSQL session store without changing it: the server answers (and how far its
 * clock is from this machine's: leases are judged by the server's), the schema's version is the
 * one this Trellis writes with every table in place, every stored session reads back (each one
 * that does not is named with the command that deletes it), and its leases by the server's
 * clock: one whose expiry lies further ahead than its TTL, or held for a process of this machine
 * that is gone, is a problem; expired ones are counted. Never migrates: a schema of an older
 * version is reported as such, its sessions unread.
 */
export async function diagnosePostgresStore(target: PostgresDoctorTarget): Promise<DoctorReport> {
  const schema = target.schema ?? DEFAULT_POSTGRES_SCHEMA;
  const server = serverOf(target);
  const where = `${server}, schema "${schema}"`;
  const findings: DoctorFinding[] = [];
  const report = () => ({ path: where, ok: findings.every((f) => f.ok), findings });
  const { pool, owns } = poolOf(target);
  try {
    const reached = await serverCheck(pool, server, schema);
    findings.push(reached);
    if (!reached.ok) return report();
    const version = await schemaCheck(pool, schema, findings);
    if (version !== POSTGRES_MIGRATIONS.at(-1)!.version) return report();
    // Current: opening runs no migration (it reads the ledger under the migration lock).
    const store = await PostgresStore.open({ pool, schema });
    try {
      findings.push(...(await sessionChecks(store)));
      findings.push(...leaseFindings(await store.listLeases(), SERVER_CLOCK));
    } finally {
      await store.close();
    }
    return report();
  } catch (error) {
    findings.push({
      check: 'session',
      ok: false,
      detail: `the store cannot be read: ${describeError(postgresError(error, 'check the store', { server, schema }))}`,
      fix: "Check the server and the role's privileges on the schema, then run trellis doctor again",
    });
    return report();
  } finally {
    if (owns) await pool.end().catch(() => undefined);
  }
}

/**
 * Repairs what is safe to repair in a PostgreSQL session store (`trellis doctor --repair`):
 * opens it, which migrates a schema of an older version (as any instance's start would), and
 * clears the leases that hold a session for nothing (expired, or further ahead than their TTL
 * by the server's clock) or for a process of this machine that is gone, each only while the
 * same holder has it. An unreadable session is left for `trellis sessions delete <id>`.
 */
export async function repairPostgresStore(target: PostgresDoctorTarget): Promise<RepairReport> {
  const schema = target.schema ?? DEFAULT_POSTGRES_SCHEMA;
  const where = `${serverOf(target)}, schema "${schema}"`;
  const actions: string[] = [];
  const { pool, owns } = poolOf(target);
  try {
    const before = await ledgerVersion(pool, schema).catch(() => undefined);
    let store: PostgresStore;
    try {
      store = await PostgresStore.open({ pool, schema });
    } catch (error) {
      return { path: where, actions, refused: `the store cannot be opened for repair: ${describeError(error)}` };
    }
    try {
      const after = POSTGRES_MIGRATIONS.at(-1)!.version;
      if (before !== undefined && before > 0 && before < after)
        actions.push(`migrated schema "${schema}" from version ${before} to ${after}`);
      for (const { lease, why } of staleLeases(await store.listLeases(), undefined, SERVER_CLOCK)) {
        if (await store.clearLease(lease.sessionId, lease.holder)) actions.push(`cleared a lease: ${why}`);
      }
    } catch (error) {
      return { path: where, actions, refused: `repair stopped: ${describeError(error)}` };
    } finally {
      await store.close();
    }
    return { path: where, actions };
  } finally {
    if (owns) await pool.end().catch(() => undefined);
  }
}

async function serverCheck(pool: pg.Pool, server: string, schema: string): Promise<DoctorFinding> {
  try {
    const { rows } = await pool.query<{ now: Date; version: string }>(
      "SELECT clock_timestamp() AS now, current_setting('server_version') AS version",
    );
    const skew = rows[0]!.now.getTime() - Date.now();
    const clock =
      Math.abs(skew) < 1000
        ? "its clock agrees with this machine's"
        : `its clock is ${(Math.abs(skew) / 1000).toFixed(1)} s ${skew > 0 ? 'ahead of' : 'behind'} this machine's`;
    return {
      check: 'server',
      ok: true,
      detail: `${server} answers (PostgreSQL ${rows[0]!.version}); ${clock} (leases are judged by the server's)`,
    };
  } catch (error) {
    return {
      check: 'server',
      ok: false,
      detail: describeError(postgresError(error, 'reach the server', { server, schema })),
      fix: 'Check that the server runs, and the URL and credentials of the store in trellis.config',
    };
  }
}

/** The schema's findings; the version read from its ledger, or undefined when there is none to go on. */
async function schemaCheck(pool: pg.Pool, schema: string, findings: DoctorFinding[]): Promise<number | undefined> {
  const latest = POSTGRES_MIGRATIONS.at(-1)!.version;
  const exists = await pool.query('SELECT 1 FROM pg_namespace WHERE nspname = $1', [schema]);
  if (exists.rowCount === 0) {
    findings.push({
      check: 'schema',
      ok: true,
      detail: `no schema "${schema}" yet (it is created when a store first opens)`,
    });
    return undefined;
  }
  const version = await ledgerVersion(pool, schema);
  if (version === 0) {
    findings.push({
      check: 'schema',
      ok: false,
      detail: `schema "${schema}" has no Trellis schema ledger (schema_migrations): it is not a Trellis store`,
      fix: 'Point storeSchema (PostgresStore.open({ schema })) at the right schema',
    });
    return undefined;
  }
  if (version > latest) {
    findings.push({
      check: 'schema',
      ok: false,
      detail: `schema version ${version} was written by a newer Trellis (this one knows up to ${latest})`,
      fix: 'Upgrade Trellis',
    });
    return undefined;
  }
  if (version < latest) {
    findings.push({
      check: 'schema',
      ok: true,
      detail: `schema version ${version}; it is migrated to ${latest} the next time a store opens it (or by trellis doctor --repair)`,
    });
    findings.push({
      check: 'session',
      ok: true,
      detail: 'sessions and leases are read back once the schema is migrated',
    });
    return version;
  }
  const { rows } = await pool.query<{ table_name: string }>(
    'SELECT table_name FROM information_schema.tables WHERE table_schema = $1',
    [schema],
  );
  const present = new Set(rows.map((row) => row.table_name));
  const missing = TABLES.filter((table) => !present.has(table));
  if (missing.length === 0) {
    findings.push({ check: 'schema', ok: true, detail: `schema "${schema}" at version ${version} (current)` });
    return version;
  }
  findings.push({
    check: 'schema',
    ok: false,
    detail: `schema "${schema}" at version ${version}, but table(s) ${missing.join(', ')} are missing: they were dropped outside Trellis`,
    fix: 'Restore the schema from a backup',
  });
  return undefined;
}

async function ledgerVersion(pool: pg.Pool, schema: string): Promise<number> {
  const ledger = await pool.query(
    `SELECT 1 FROM information_schema.tables WHERE table_schema = $1 AND table_name = 'schema_migrations'`,
    [schema],
  );
  if (ledger.rowCount === 0) return 0;
  const { rows } = await pool.query<{ version: number | null }>(
    `SELECT MAX(version) AS version FROM ${quoteIdentifier(schema)}.schema_migrations`,
  );
  return rows[0]?.version ?? 0;
}

async function sessionChecks(store: PostgresStore): Promise<DoctorFinding[]> {
  const sessions = await store.list();
  const findings: DoctorFinding[] = [];
  for (const { id } of sessions) {
    try {
      await store.load(id);
    } catch (error) {
      if (!TrellisError.is(error, 'InvalidCheckpoint') && !TrellisError.is(error, 'StoreCorrupt')) throw error;
      findings.push({
        check: 'session',
        ok: false,
        detail: error.message.split('. ')[0]!,
        fix: `trellis sessions delete ${id}`,
      });
    }
  }
  findings.unshift({
    check: 'session',
    ok: findings.length === 0,
    detail: `${sessions.length - findings.length} of ${sessions.length} stored session(s) read back`,
  });
  return findings;
}

function poolOf(target: PostgresDoctorTarget): { pool: pg.Pool; owns: boolean } {
  if (target.pool !== undefined) return { pool: target.pool, owns: false };
  // pg loads when a check runs, not when Trellis is imported.
  const { Pool } = createRequire(import.meta.url)('pg') as typeof pg;
  const pool = new Pool({
    connectionString: target.url,
    max: 2,
    connectionTimeoutMillis: 10_000,
    application_name: 'trellis doctor',
    statement_timeout: 30_000,
  });
  pool.on('error', () => undefined);
  return { pool, owns: true };
}

/** `postgres://host:port/database`: never the user or password. */
function serverOf(target: PostgresDoctorTarget): string {
  if (target.url === undefined) return 'a host-supplied pool';
  try {
    const url = new URL(target.url);
    return `postgres://${url.host}${url.pathname}`;
  } catch {
    return 'postgres://(unparseable URL)';
  }
}
