import { createHash } from 'node:crypto';
import { createRequire } from 'node:module';
import { assertSessionId } from './session-id.js';
import type pg from 'pg';
import { TrellisError } from '../../errors/trellis-error.js';
import { offloadParts, referencedBlobs, restoreParts } from './part-blobs.js';
import { encodeCheckpoint, encodeSteps, StoredRowDecoder } from './checkpoint-codec.js';
import { nextRevision } from './checkpoint-revision.js';
import { applyPostgresMigrations, quoteIdentifier } from './postgres-migrations.js';
import { PostgresRecords } from './postgres-records.js';
import type { RecordSelector, RecordStore, StoredRecord } from './record-store.js';
import { postgresError, type PostgresTarget } from './postgres-errors.js';
import { postgresStatements, type PostgresStatements } from './postgres-sql.js';
import {
  assertLeaseArguments,
  MAX_LEASE_TTL_MS,
  type LeaseAdmin,
  type LeaseState,
  type LeaseView,
} from './session-lease.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import type {
  RevisionReader,
  SessionCheckpoint,
  SessionStore,
  SessionSummary,
  StoredSession,
} from './session-store.js';
import { leaseLost, type StepAppend, type StepJournal } from './step-journal.js';
import { chainAuditEntries } from './audit-chain.js';
import type { AuditEntry, AuditLog, AuditRecord } from './audit-log.js';
import { assertCredential, type CredentialStore } from './credential-store.js';
import type { LoadedExtent, SessionDelta, SessionDeltaReader } from './session-delta.js';

/** The schema {@link PostgresStore} uses when none is given. */
export const DEFAULT_POSTGRES_SCHEMA = 'trellis';

/** Options of {@link PostgresStore.open}: a pool the host owns, or a URL to make one from. */
export type PostgresStoreOptions = (
  | {
      /** The host's pool; the store borrows it and never ends it. */
      readonly pool: pg.Pool;
      readonly url?: never;
    }
  | {
      /** `postgres://user:password@host:5432/database`; the store makes a pool and ends it on `close()`. */
      readonly url: string;
      readonly pool?: never;
      /** Connections in the pool the store makes. Default 10. */
      readonly maxConnections?: number;
    }
) & {
  /** The schema holding Trellis's tables, created when missing. Default `trellis`. */
  readonly schema?: string;
  /**
   * How long a write (checkpoint, journalled step, delete) waits for a row lock held
   * elsewhere before it fails with a retryable `StoreFailed` (`lock_timeout`). Default 5,000.
   * A host's `pool` made with both `lock_timeout` and `statement_timeout` keeps its own values
   * and gets the one-round-trip writes; on one without, each write sets these in a transaction.
   */
  readonly lockTimeoutMs?: number;
  /** How long one statement of a write transaction may run (`statement_timeout`). Default 30,000. */
  readonly statementTimeoutMs?: number;
};

/** The waits a {@link PostgresStore}'s transactions are bounded by. */
export interface PostgresTimeouts {
  readonly lockTimeoutMs: number;
  readonly statementTimeoutMs: number;
}

const DEFAULT_TIMEOUTS: PostgresTimeouts = { lockTimeoutMs: 5_000, statementTimeoutMs: 30_000 };

function timeoutsOf(options: PostgresStoreOptions): PostgresTimeouts {
  const timeouts = {
    lockTimeoutMs: options.lockTimeoutMs ?? DEFAULT_TIMEOUTS.lockTimeoutMs,
    statementTimeoutMs: options.statementTimeoutMs ?? DEFAULT_TIMEOUTS.statementTimeoutMs,
  };
  for (const [name, value] of Object.entries(timeouts)) {
    if (!Number.isSafeInteger(value) || value < 1 || value > 3_600_000) {
      throw new TrellisError(
        'InvalidOptions',
        `PostgresStore ${name} must be a whole number of milliseconds from 1 to 3,600,000; got ${String(value)}`,
        {
          hint: `Pass e.g. ${name}: ${DEFAULT_TIMEOUTS[name as keyof PostgresTimeouts]}, or leave it out`,
          details: { [name]: value },
        },
      );
    }
  }
  return timeouts;
}

interface SessionRow {
  readonly id: string;
  readonly agent: string;
  readonly revision: number;
  readonly state: string;
  readonly suspension: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly seqs: number[];
  readonly messages: string[];
  readonly turn_indexes: number[];
  readonly turns: string[];
  readonly steps: string[];
}

/** A row of `loadSince`: everything but the head is null when the revision did not move. */
interface DeltaRow {
  readonly agent: string;
  readonly revision: number;
  readonly created_at: string;
  readonly unchanged: boolean;
  readonly state: string | null;
  readonly suspension: string | null;
  readonly updated_at: string | null;
  readonly message_count: number | null;
  readonly seqs: number[] | null;
  readonly messages: string[] | null;
  readonly turn_indexes: number[] | null;
  readonly turns: string[] | null;
  readonly steps: string[] | null;
}

/** What a write statement (`checkpoint`, `appendSteps`) answers: the new revision, or why there is none. */
interface WriteRow {
  readonly revision: number | null;
  readonly fenced: boolean;
  readonly stored_revision: number | null;
  readonly stored_agent: string | null;
}

interface SummaryRow {
  readonly id: string;
  readonly agent: string;
  readonly updated_at: string;
  readonly suspended: boolean;
  readonly turns: number;
}

/** A row of `session_leases` as `selectLeases` reads it, judged in SQL by the server's clock. */
interface LeaseRow {
  readonly session_id: string;
  readonly holder: string;
  /** Null for an expiry of 'infinity'. */
  readonly expires_at: string | null;
  /** Null in a row written before the TTL was kept (schema version 8). */
  readonly ttl_ms: number | null;
  readonly state: LeaseState;
}

function leaseView(row: LeaseRow): LeaseView {
  return {
    sessionId: row.session_id,
    holder: row.holder,
    expiresAt: row.expires_at ?? undefined,
    ttlMs: row.ttl_ms ?? MAX_LEASE_TTL_MS,
    state: row.state,
  };
}

const SCHEMA_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,62}$/;

/**
 * A {@link SessionStore} on PostgreSQL, for many instances of one backend. Each
 * `checkpoint` is one statement (one round trip, one commit) that checks the lease fence and
 * the revision and writes transcript, turn record, state and suspension together, ending
 * the turn's step journal and, when asked, its lease; a concurrent writer on the same
 * revision gets `StaleState` and writes nothing. Leases are judged by the
 * server's clock, so instances with skewed clocks agree. Its tables live in one schema,
 * migrated under an advisory lock; a schema written by a newer Trellis is refused.
 * Driver errors come out as `TrellisError`s (`StoreUnavailable`, `StoreFailed`,
 * `UnsupportedSchema`).
 *
 * @example
 * const store = await PostgresStore.open({ url: process.env.DATABASE_URL! });
 * const app = await Trellis.create({ store });
 */
export class PostgresStore
  implements
    SessionStore,
    RevisionReader,
    StepJournal,
    AuditLog,
    CredentialStore,
    RecordStore,
    SessionDeltaReader,
    LeaseAdmin
{
  /** The schema this store's tables live in. */
  readonly schema: string;
  /**
   * The lock and statement timeouts every write is bounded by: the store's own pool sets them
   * on its connections; on a host's pool each write sets them in its transaction (`SET LOCAL`).
   */
  readonly timeouts: PostgresTimeouts;
  /** The checkpoint's own statement gives the turn's lease up: no release round trip after it. */
  readonly releasesLeaseOnCheckpoint = true;
  private closed = false;
  /** `BEGIN` and the transaction's timeouts, in one round trip. */
  private readonly begin: string;
  private readonly records: PostgresRecords;
  /**
   * Every connection of the pool bounds its statements: the store's own pool, or a host's
   * made with both `lock_timeout` and `statement_timeout` (its values then apply).
   */
  private readonly boundedPool: boolean;
  /** Names this schema's prepared statements (see {@link statementName}). */
  private readonly schemaHash: string;

  private constructor(
    private readonly pool: pg.Pool,
    private readonly ownsPool: boolean,
    private readonly target: PostgresTarget,
    private readonly sql: PostgresStatements,
    timeouts: PostgresTimeouts,
  ) {
    this.schema = target.schema;
    this.timeouts = timeouts;
    this.boundedPool = ownsPool || boundsStatements(pool);
    this.schemaHash = createHash('sha256').update(target.schema).digest('hex').slice(0, 16);
    this.begin = `BEGIN; SET LOCAL lock_timeout = ${timeouts.lockTimeoutMs}; SET LOCAL statement_timeout = ${timeouts.statementTimeoutMs}`;
    this.records = new PostgresRecords(
      (operation, text, values) => this.query(operation, text, values),
      quoteIdentifier(target.schema),
    );
  }

  /**
   * Connects, creates the schema when missing and runs pending migrations.
   *
   * @throws TrellisError `InvalidOptions` for bad options, `UnsupportedSchema` for a schema
   *   written by a newer Trellis, `StoreUnavailable` when the server cannot be reached.
   */
  static async open(options: PostgresStoreOptions): Promise<PostgresStore> {
    const schema = options.schema ?? DEFAULT_POSTGRES_SCHEMA;
    if (!SCHEMA_NAME.test(schema)) {
      throw new TrellisError(
        'InvalidOptions',
        `"${schema}" is not a usable PostgreSQL schema name for the Trellis store`,
        {
          hint: 'Use letters, digits and underscores, starting with a letter or underscore, at most 63 characters',
          details: { schema },
        },
      );
    }
    const timeouts = timeoutsOf(options);
    const { pool, owns, server } = poolFrom(options, timeouts);
    const target = { server, schema };
    try {
      const client = await pool.connect();
      try {
        await applyPostgresMigrations(client, schema);
      } finally {
        client.release();
      }
    } catch (error) {
      if (owns) await pool.end().catch(() => undefined);
      throw postgresError(error, 'open the session store', target);
    }
    return new PostgresStore(pool, owns, target, postgresStatements(quoteIdentifier(schema)), timeouts);
  }

  async load(sessionId: string): Promise<StoredSession | undefined> {
    assertSessionId(sessionId);
    const { rows } = await this.query<SessionRow>('load a session', this.sql.load, [sessionId]);
    const row = rows[0];
    if (!row) return undefined;
    const decode = new StoredRowDecoder(sessionId, 'database');
    const transcript = await this.withBlobs(
      sessionId,
      row.messages.map((message, i) => decode.message(message, row.seqs[i]!, 'messages')),
      'load a session',
    );
    const steps =
      row.steps.length === 0 ? undefined : row.steps.flatMap((raw, i) => decode.steps(raw, i, 'turn_steps'));
    return {
      id: row.id,
      agent: row.agent,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      revision: row.revision,
      state: decode.state(row.state, 'sessions.state'),
      transcript,
      turns: row.turns.map((record, i) => decode.turn(record, row.turn_indexes[i]!, 'turns')),
      suspension: decode.parse(row.suspension, 'sessions.suspension'),
      ...(steps && { steps }),
    };
  }

  /**
   * One statement; when the session did not move it reads the session row alone. Image and
   * file bytes kept in part_blobs come back in the new messages, as `load` gives them.
   */
  async loadSince(sessionId: string, since: LoadedExtent): Promise<SessionDelta | undefined> {
    assertSessionId(sessionId);
    const { rows } = await this.query<DeltaRow>(
      'catch a session up',
      this.sql.loadSince,
      [sessionId, since.revision, since.messages, since.turns, since.createdAt ?? null],
      'loadSince',
    );
    const row = rows[0];
    if (!row) return undefined;
    if (row.unchanged) return { unchanged: true, revision: row.revision, createdAt: row.created_at };
    const decode = new StoredRowDecoder(sessionId, 'database');
    const steps =
      row.steps!.length === 0 ? undefined : row.steps!.flatMap((raw, i) => decode.steps(raw, i, 'turn_steps'));
    return {
      unchanged: false,
      agent: row.agent,
      revision: row.revision,
      createdAt: row.created_at,
      updatedAt: row.updated_at!,
      messageCount: row.message_count!,
      state: decode.state(row.state!, 'sessions.state'),
      suspension: decode.parse(row.suspension!, 'sessions.suspension'),
      transcript: await this.withBlobs(
        sessionId,
        row.messages!.map((message, i) => decode.message(message, row.seqs![i]!, 'messages')),
        'catch a session up',
      ),
      turns: row.turns!.map((record, i) => decode.turn(record, row.turn_indexes![i]!, 'turns')),
      ...(steps && { steps }),
    };
  }

  /** The stored messages with the bytes of their parts kept in part_blobs put back (one more read, only when they refer to any). */
  private async withBlobs(sessionId: string, stored: ChatMessage[], operation: string): Promise<ChatMessage[]> {
    const refs = referencedBlobs(stored);
    if (refs.length === 0) return stored;
    const blobs = await this.query<{ id: string; data: string }>(operation, this.sql.selectBlobs, [sessionId, refs]);
    return restoreParts(stored, new Map(blobs.rows.map((blob) => [blob.id, blob.data])), sessionId);
  }

  async revision(sessionId: string): Promise<number | undefined> {
    assertSessionId(sessionId);
    const { rows } = await this.query<{ revision: number }>('read a session revision', this.sql.revision, [sessionId]);
    return rows[0]?.revision;
  }

  /** One statement, so one round trip and one commit (see `postgresStatements().checkpoint`). */
  async checkpoint(checkpoint: SessionCheckpoint): Promise<number> {
    assertSessionId(checkpoint.sessionId);
    // Large image and file bytes go to part_blobs; the transcript keeps a reference.
    const { messages, blobs } = offloadParts(checkpoint.append);
    const encoded = encodeCheckpoint(messages === checkpoint.append ? checkpoint : { ...checkpoint, append: messages });
    const { sessionId, expectedRevision } = checkpoint;
    // A revision the SQL cannot even bind is the caller's mistake, said as every store says it.
    if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) nextRevision(checkpoint, undefined);
    if (checkpoint.fence !== undefined) assertLeaseArguments(sessionId, checkpoint.fence);
    if (checkpoint.releaseLease !== undefined) assertLeaseArguments(sessionId, checkpoint.releaseLease);
    const values = [
      sessionId,
      checkpoint.agent,
      expectedRevision,
      encoded.state,
      encoded.suspension,
      encoded.messages,
      checkpoint.turn.index,
      encoded.turn,
      checkpoint.fence ?? null,
      checkpoint.releaseLease ?? null,
      blobs.map((blob) => blob.id),
      blobs.map((blob) => blob.data),
    ];
    const { rows } = await this.write<WriteRow>('checkpoint a session', this.sql.checkpoint, values, 'checkpoint');
    const row = rows[0]!;
    if (row.revision !== null) return row.revision;
    // The fence first: a writer whose lease was taken over hears that, not that it is stale.
    if (!row.fenced) throw leaseLost(sessionId);
    const head = row.stored_revision === null ? undefined : { revision: row.stored_revision, agent: row.stored_agent! };
    nextRevision(checkpoint, head);
    // The snapshot agreed, so a concurrent writer moved (or created) the session between it and the write.
    throw expectedRevision === 0
      ? createdMeanwhile(sessionId)
      : nextRevisionRace(sessionId, expectedRevision, 'checkpoint');
  }

  /** One statement: the fence, the revision rule and the steps' row (see `postgresStatements().appendSteps`). */
  async appendSteps(append: StepAppend): Promise<number> {
    assertSessionId(append.sessionId);
    const steps = encodeSteps(append);
    const { sessionId } = append;
    if (append.fence !== undefined) assertLeaseArguments(sessionId, append.fence);
    const { rows } = await this.write<WriteRow>(
      'journal a step',
      this.sql.appendSteps,
      [sessionId, append.agent, append.expectedRevision, steps, append.fence ?? null],
      'appendSteps',
    );
    const row = rows[0]!;
    if (row.revision !== null) return row.revision;
    if (!row.fenced) throw leaseLost(sessionId);
    // Nothing was written: the revision rule says why (from the snapshot the statement read).
    const head = row.stored_revision === null ? undefined : { revision: row.stored_revision, agent: row.stored_agent! };
    nextRevision(append, head);
    // The snapshot agreed, so a concurrent writer moved the session between it and the write.
    throw nextRevisionRace(sessionId, append.expectedRevision, 'step');
  }

  /** One transaction under an advisory lock: instances append in one order, each row chained to the last. */
  async appendAudit(entries: readonly AuditEntry[]): Promise<readonly AuditRecord[]> {
    if (entries.length === 0) return [];
    return this.transaction('append to the audit log', async (client) => {
      await client.query('SELECT pg_advisory_xact_lock(hashtext($1))', [`trellis.audit:${this.schema}`]);
      const last = (await client.query<{ seq: string; hash: string }>(this.sql.lastAudit, [])).rows[0];
      const records = chainAuditEntries(last && { seq: Number(last.seq), hash: last.hash }, entries);
      await client.query(this.sql.insertAudit, [
        records.map((r) => r.seq),
        records.map((r) => r.prevHash),
        records.map((r) => r.hash),
        records.map((r) => JSON.stringify(r.entry)),
      ]);
      return records;
    });
  }

  async readAudit(options: { readonly after?: number; readonly limit?: number } = {}): Promise<readonly AuditRecord[]> {
    const { rows } = await this.query<{ seq: string; prev_hash: string; hash: string; entry: string }>(
      'read the audit log',
      this.sql.selectAudit,
      [options.after ?? 0, options.limit ?? null],
    );
    const decode = new StoredRowDecoder('(audit log)', 'database');
    return rows.map((row) => ({
      seq: Number(row.seq),
      prevHash: row.prev_hash,
      hash: row.hash,
      entry: decode.parse(row.entry, `audit_log.entry (seq ${row.seq})`) as AuditEntry,
    }));
  }

  async loadCredential(owner: string, name: string): Promise<string | undefined> {
    assertCredential(owner, name);
    return (await this.query<{ value: string }>('read a credential', this.sql.selectCredential, [owner, name])).rows[0]
      ?.value;
  }

  async saveCredential(owner: string, name: string, value: string): Promise<void> {
    assertCredential(owner, name, value);
    await this.query('keep a credential', this.sql.upsertCredential, [owner, name, value]);
  }

  async deleteCredential(owner: string, name: string): Promise<void> {
    assertCredential(owner, name);
    await this.query('forget a credential', this.sql.deleteCredential, [owner, name]);
  }

  getRecord(namespace: string, subject: string, key: string): Promise<StoredRecord | undefined> {
    return this.records.getRecord(namespace, subject, key);
  }

  putRecord(namespace: string, subject: string, key: string, value: unknown): Promise<void> {
    return this.records.putRecord(namespace, subject, key, value);
  }

  listRecords(namespace: string, subject: string): Promise<readonly StoredRecord[]> {
    return this.records.listRecords(namespace, subject);
  }

  deleteRecords(namespace: string, selector: RecordSelector): Promise<number> {
    return this.records.deleteRecords(namespace, selector);
  }

  async list(): Promise<readonly SessionSummary[]> {
    const { rows } = await this.query<SummaryRow>('list sessions', this.sql.list, []);
    return rows.map((row) => ({
      id: row.id,
      agent: row.agent,
      turns: row.turns,
      updatedAt: row.updated_at,
      suspended: row.suspended,
    }));
  }

  /**
   * Deletes the session and, in the same statement, its lease (whoever holds it: a turn still
   * running there has its writes refused `LeaseLost`). Whether a session row was deleted.
   */
  async delete(sessionId: string): Promise<boolean> {
    assertSessionId(sessionId);
    // Messages, turns, steps and part blobs go with the session through ON DELETE CASCADE.
    return ((await this.query('delete a session', this.sql.deleteSession, [sessionId])).rowCount ?? 0) > 0;
  }

  /**
   * Deletes the sessions not written for `olderThanDays` days (by the server's clock), with
   * their transcripts, turns and step journals, except one whose lease is held (a turn is
   * running); also drops leases lapsed for a day. Returns how many sessions went. A store
   * whose sessions are never pruned grows with every turn: run it daily (`trellis sessions
   * prune --older-than <days>`, or a cron job of your own).
   *
   * @throws TrellisError `InvalidOptions` unless `olderThanDays` is a whole number of at least 1.
   */
  async prune(olderThanDays: number): Promise<number> {
    if (!Number.isSafeInteger(olderThanDays) || olderThanDays < 1) {
      throw new TrellisError(
        'InvalidOptions',
        `Pruning sessions needs a whole number of days, at least 1; got ${String(olderThanDays)}`,
        { hint: 'e.g. store.prune(30): sessions not written for 30 days go' },
      );
    }
    const { rows } = await this.query<{ pruned: number }>('prune old sessions', this.sql.prune, [olderThanDays]);
    return rows[0]!.pruned;
  }

  /**
   * Judged by the server's clock (`clock_timestamp()`), whatever the instances' clocks say. A
   * lease whose expiry lies further ahead than its TTL (the server's clock was stepped back, a
   * fail-over reached a server whose clock is behind, a row was written by hand) holds nothing
   * and is taken like an expired one.
   */
  async acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean> {
    assertLeaseArguments(sessionId, holder, ttlMs);
    return (
      ((await this.query('take a session lease', this.sql.acquireLease, [sessionId, holder, ttlMs])).rowCount ?? 0) > 0
    );
  }

  /**
   * Takes the lease `leaseKey` (as {@link acquireLease}) and, when taken, reads the revision of
   * `sessionId` (0 when it is not stored) in the same round trip: what a queue worker asks
   * before it runs a job. Undefined when another holder has the lease.
   */
  async acquireLeaseReadingRevision(
    leaseKey: string,
    holder: string,
    ttlMs: number,
    sessionId: string,
  ): Promise<number | undefined> {
    assertLeaseArguments(leaseKey, holder, ttlMs);
    assertSessionId(sessionId);
    const { rows } = await this.query<{ taken: boolean; revision: number | null }>(
      'take a session lease',
      this.sql.acquireLeaseReadingRevision,
      [leaseKey, holder, ttlMs, sessionId],
      'acquireLeaseReadingRevision',
    );
    return rows[0]!.taken ? rows[0]!.revision! : undefined;
  }

  async renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean> {
    assertLeaseArguments(sessionId, holder, ttlMs);
    return (
      ((await this.query('renew a session lease', this.sql.renewLease, [sessionId, holder, ttlMs])).rowCount ?? 0) > 0
    );
  }

  async releaseLease(sessionId: string, holder: string): Promise<void> {
    assertLeaseArguments(sessionId, holder);
    await this.query('release a session lease', this.sql.releaseLease, [sessionId, holder]);
  }

  /** Every lease row, judged by the server's clock; queue workers' lease keys are among them. */
  async listLeases(): Promise<readonly LeaseView[]> {
    return (await this.query<LeaseRow>('list session leases', this.sql.selectLeases, [])).rows.map(leaseView);
  }

  async clearLease(sessionId: string, holder?: string): Promise<LeaseView | undefined> {
    assertSessionId(sessionId);
    const { rows } = await this.query<LeaseRow>('clear a session lease', this.sql.clearLease, [
      sessionId,
      holder ?? null,
    ]);
    return rows[0] && leaseView(rows[0]);
  }

  /** Ends the pool if the store made it; a pool the host passed in stays open. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    if (this.ownsPool) await this.pool.end();
  }

  /**
   * One statement on a pooled connection. `prepared` names a hot statement: each connection
   * parses and plans it once (the name carries the schema, so stores of several schemas may
   * share a host's pool).
   */
  private async query<R extends pg.QueryResultRow>(
    operation: string,
    text: string,
    values: unknown[],
    prepared?: string,
  ): Promise<pg.QueryResult<R>> {
    this.assertOpen(operation);
    try {
      if (prepared !== undefined) return await this.pool.query<R>({ name: this.statementName(prepared), text, values });
      return await this.pool.query<R>(text, values);
    } catch (error) {
      throw postgresError(error, operation, this.target);
    }
  }

  /**
   * One write statement, bounded by lock and statement timeouts: on a pool whose connections
   * carry them (the store's own, or a host's made with both) it goes alone, one round trip;
   * on a host's pool without them it runs in a transaction that sets the store's (`SET LOCAL`).
   */
  private write<R extends pg.QueryResultRow>(
    operation: string,
    text: string,
    values: unknown[],
    prepared: string,
  ): Promise<pg.QueryResult<R>> {
    if (this.boundedPool) return this.query<R>(operation, text, values, prepared);
    return this.transaction(operation, (client) =>
      client.query<R>({ name: this.statementName(prepared), text, values }),
    );
  }

  private async transaction<T>(operation: string, work: (client: pg.PoolClient) => Promise<T>): Promise<T> {
    this.assertOpen(operation);
    let client: pg.PoolClient;
    try {
      client = await this.pool.connect();
    } catch (error) {
      throw postgresError(error, operation, this.target);
    }
    let broken = false;
    try {
      // Bounded waits: a row lock held elsewhere, or a statement stuck, fails the write (retryable) rather than hanging it.
      await client.query(this.begin);
      const result = await work(client);
      await client.query('COMMIT');
      return result;
    } catch (error) {
      // A failed ROLLBACK means the connection is gone: destroy it rather than pool it.
      await client.query('ROLLBACK').catch(() => (broken = true));
      throw postgresError(error, operation, this.target);
    } finally {
      client.release(broken);
    }
  }

  /**
   * The name of a prepared statement on a connection: the schema goes in as a short hash, so
   * stores of several schemas may share a host's pool and the name stays within PostgreSQL's
   * 63 characters (a longer one is cut, and two cut alike would collide).
   */
  private statementName(statement: string): string {
    return `trellis_${this.schemaHash}_${statement}`;
  }

  private assertOpen(operation: string): void {
    if (!this.closed) return;
    throw new TrellisError(
      'StoreUnavailable',
      `Cannot ${operation}: this PostgresStore (schema "${this.schema}") was closed`,
      {
        hint: 'Open a new store with PostgresStore.open(); a closed one stays closed',
        kind: 'user',
      },
    );
  }
}

// Sealed: a plugin in the same process cannot patch PostgresStore's methods to capture sessions or transcripts (issue 34).
Object.freeze(PostgresStore.prototype);
Object.freeze(PostgresStore);

/** The session moved on while the statement ran: another writer's step or checkpoint landed first. */
function nextRevisionRace(sessionId: string, expectedRevision: number, what: 'step' | 'checkpoint'): TrellisError {
  const written = what === 'step' ? 'this step was journalled' : 'this checkpoint was written';
  return new TrellisError(
    'StaleState',
    `Session "${sessionId}" was written by another writer while ${written} on revision ${expectedRevision}`,
    {
      hint: 'Another turn wrote it first: reload the session and retry',
      details: { sessionId, expectedRevision },
    },
  );
}

/** A concurrent writer created the session between our read and our insert. */
function createdMeanwhile(sessionId: string): TrellisError {
  return new TrellisError(
    'StaleState',
    `Session "${sessionId}" was created by another writer while this checkpoint was being written as its first`,
    {
      hint: 'Another turn wrote it first: reload the session and retry',
      details: { sessionId, expectedRevision: 0 },
    },
  );
}

function poolFrom(
  options: PostgresStoreOptions,
  timeouts: PostgresTimeouts,
): { pool: pg.Pool; owns: boolean; server: string } {
  if (options.pool && options.url === undefined)
    return { pool: options.pool, owns: false, server: 'a host-supplied pool' };
  if (typeof options.url !== 'string' || options.pool) {
    throw new TrellisError(
      'InvalidOptions',
      'PostgresStore.open() needs exactly one of `pool` (a pg.Pool) or `url` (postgres://…)',
      {
        hint: 'Pass { url: process.env.DATABASE_URL } or { pool } for a pool your application already has',
      },
    );
  }
  const max = 'maxConnections' in options ? options.maxConnections : undefined;
  if (max !== undefined && (!Number.isSafeInteger(max) || max < 1)) {
    throw new TrellisError(
      'InvalidOptions',
      `PostgresStore maxConnections must be a whole number of at least 1; got ${String(max)}`,
      { details: { maxConnections: max } },
    );
  }
  // pg loads when a store opens by URL, not when Trellis is imported.
  const { Pool } = createRequire(import.meta.url)('pg') as typeof pg;
  // Its connections bound single statements too (reads, lease calls); a host's own pool keeps its settings, and writes set theirs per transaction.
  const pool = new Pool({
    connectionString: options.url,
    max: max ?? 10,
    connectionTimeoutMillis: 10_000,
    application_name: 'trellis',
    lock_timeout: timeouts.lockTimeoutMs,
    statement_timeout: timeouts.statementTimeoutMs,
  });
  // An idle connection that the server drops emits 'error' on the pool; unheard, it would
  // kill the process. The next query simply gets a fresh connection or a StoreUnavailable.
  pool.on('error', () => undefined);
  return { pool, owns: true, server: describeServer(options.url) };
}

/** Whether a host's pool makes its connections with both timeouts (`new pg.Pool({ lock_timeout, statement_timeout })`). */
function boundsStatements(pool: pg.Pool): boolean {
  const options = (pool as { options?: { lock_timeout?: unknown; statement_timeout?: unknown } }).options;
  const bounded = (value: unknown) => typeof value === 'number' && Number.isFinite(value) && value > 0;
  return bounded(options?.lock_timeout) && bounded(options?.statement_timeout);
}

/** `host:port/database` of a URL, never its user or password. */
function describeServer(url: string): string {
  try {
    const parsed = new URL(url);
    return `${parsed.hostname}:${parsed.port || '5432'}${parsed.pathname}`;
  } catch {
    throw new TrellisError('InvalidOptions', 'The PostgreSQL URL of the session store is not a URL', {
      hint: 'Write it as postgres://user:password@host:5432/database',
    });
  }
}
