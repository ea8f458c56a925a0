import { closeSync, existsSync, mkdirSync, openSync, statSync } from 'node:fs';
import { assertSessionId } from './session-id.js';
import { createRequire } from 'node:module';
import { dirname } from 'node:path';
import type Database from 'better-sqlite3';
import { asTrellisError, TrellisError } from '../../errors/trellis-error.js';
import { offloadParts, referencedBlobs, restoreParts, type PartBlob } from './part-blobs.js';
import {
  encodeBatchCheckpoint,
  encodeSteps,
  StoredRowDecoder,
  type EncodedBatchCheckpoint,
} from './checkpoint-codec.js';
import { nextRevision, type StoredHead } from './checkpoint-revision.js';
import {
  assertLeaseArguments,
  LEASE_CLOCK_TOLERANCE_MS,
  leaseState,
  type LeaseAdmin,
  type LeaseView,
} from './session-lease.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import type {
  RevisionReader,
  SessionCheckpoint,
  SessionStore,
  SessionSummary,
  StoredSession,
  TurnRecord,
} from './session-store.js';
import { guardStore, sqliteStoreError } from './sqlite-errors.js';
import { leaseLost, type StepAppend, type StepJournal } from './step-journal.js';
import { applyMigrations, assertSchemaCurrent } from './sqlite-migrations.js';
import { admitTurnEvents, noSessionForEvents, type TurnEventUsage } from './turn-event-budget.js';
import type { RecordedTurnEvent, StoredTurnEvents, TurnEventLog } from './turn-event-log.js';
import { assertCredential, type CredentialStore } from './credential-store.js';
import { chainAuditEntries } from './audit-chain.js';
import type { AuditEntry, AuditLog, AuditRecord } from './audit-log.js';
import type { BudgetCounts } from './budget-counts.js';
import type { RecordSelector, RecordStore, StoredRecord } from './record-store.js';
import { SqliteRecords } from './sqlite-records.js';

/** Where {@link SqliteStore} puts its file when no path is given, relative to the working directory. */
export const DEFAULT_SQLITE_PATH = '.trellis/trellis.db';

/** Options of {@link SqliteStore}. */
export interface SqliteStoreOptions {
  /** The database file; its folder is created. Default `.trellis/trellis.db`; `:memory:` for a private in-memory one. */
  readonly path?: string;
  /** Open an existing, migrated file for reading only (`checkpoint` and `delete` then fail). */
  readonly readonly?: boolean;
  /**
   * With `readonly`: a file written by an older Trellis is migrated first (one short write
   * transaction, as opening it for writing would), then opened for reading only. Without it
   * such a file is refused with `UnsupportedSchema`. For read-only tools run after an
   * upgrade (`trellis sessions`).
   */
  readonly upgrade?: boolean;
}

interface SessionRow {
  readonly id: string;
  readonly agent: string;
  readonly revision: number;
  readonly state: string;
  readonly suspension: string;
  readonly created_at: string;
  readonly updated_at: string;
  readonly message_count: number;
}

/** The session row's head: where its transcript's next batch starts, and its turns so far. */
interface SqliteHead extends StoredHead {
  readonly message_count: number;
  readonly turn_count: number;
  readonly last_turn_index: number;
}

interface SummaryRow {
  readonly id: string;
  readonly agent: string;
  readonly turns: number;
  readonly updated_at: string;
  readonly suspended: number;
}

/**
 * The embedded default {@link SessionStore}: one SQLite file in WAL mode that several
 * processes may share. Each `checkpoint` is one immediate transaction — revision check,
 * transcript, turn record, state and suspension commit together or not at all, and
 * concurrent writers queue on the file lock (up to 5 s) instead of interleaving. A row
 * that no longer parses fails the load with `InvalidCheckpoint` rather than return part
 * of a session.
 *
 * @example
 * const store = SqliteStore.open('.trellis/orders.db');
 * const app = await Trellis.create({ store });
 */
export class SqliteStore
  implements
    SessionStore,
    RevisionReader,
    TurnEventLog,
    StepJournal,
    AuditLog,
    LeaseAdmin,
    BudgetCounts,
    CredentialStore,
    RecordStore
{
  /** The file (or `:memory:`) this store opened. */
  readonly path: string;
  /** Whether the store was opened with `readonly: true`. */
  readonly readonly: boolean;
  private readonly db: Database.Database;
  private readonly sql: ReturnType<typeof prepareStatements>;
  private readonly writeCheckpoint: (
    checkpoint: SessionCheckpoint,
    encoded: EncodedBatchCheckpoint,
    blobs: readonly PartBlob[],
  ) => number;
  private readonly readSession: (sessionId: string) => StoredSession | undefined;
  private readonly writeTurnEvents: (
    sessionId: string,
    turnIndex: number,
    events: readonly RecordedTurnEvent[],
  ) => void;
  private readonly writeSteps: (append: StepAppend, steps: string) => number;
  private readonly writeAudit: (entries: readonly AuditEntry[]) => AuditRecord[];
  private readonly writeBudgetCount: (
    key: string,
    windowStart: number,
    amount: number,
    expiresAt: number,
    now: number,
  ) => number;
  /** Budget counts added since expired rows were last dropped. */
  private budgetAdds = 0;
  private readonly records: SqliteRecords;

  constructor(options: SqliteStoreOptions = {}) {
    this.path = options.path ?? DEFAULT_SQLITE_PATH;
    this.readonly = options.readonly ?? false;
    if (this.readonly && options.upgrade === true) migrateOnce(this.path);
    this.db = openDatabase(this.path, this.readonly);
    this.sql = guardStore('prepare its statements', this.path, () => prepareStatements(this.db));
    this.writeCheckpoint = this.db.transaction(
      (checkpoint: SessionCheckpoint, encoded: EncodedBatchCheckpoint, blobs: readonly PartBlob[]) =>
        this.applyCheckpoint(checkpoint, encoded, blobs),
    ).immediate;
    // A read transaction gives load() one snapshot even while another process commits.
    this.readSession = this.db.transaction((sessionId: string) => this.readRows(sessionId)).deferred;
    this.writeTurnEvents = this.db.transaction(
      (sessionId: string, turnIndex: number, events: readonly RecordedTurnEvent[]) =>
        this.applyTurnEvents(sessionId, turnIndex, events),
    ).immediate;
    this.writeSteps = this.db.transaction((append: StepAppend, steps: string) =>
      this.applySteps(append, steps),
    ).immediate;
    this.records = new SqliteRecords(this.db, this.path, (operation) => this.assertWritable(operation));
    // Immediate: the last row is read under the write lock, so processes sharing the file chain in one order.
    this.writeAudit = this.db.transaction((entries: readonly AuditEntry[]) => this.insertAudit(entries)).immediate;
    this.writeBudgetCount = this.db.transaction(
      (key: string, windowStart: number, amount: number, expiresAt: number, now: number) => {
        // Expired windows go now and then, not on every add.
        if (++this.budgetAdds % 256 === 1) this.sql.dropExpiredBudgets.run(now);
        return (this.sql.addBudgetCount.get(key, windowStart, amount, expiresAt) as { count: number }).count;
      },
    ).immediate;
  }

  /** Opens (creating and migrating when needed) the store at `path`. */
  static open(path: string = DEFAULT_SQLITE_PATH, options: Omit<SqliteStoreOptions, 'path'> = {}): SqliteStore {
    return new SqliteStore({ ...options, path });
  }

  async load(sessionId: string): Promise<StoredSession | undefined> {
    assertSessionId(sessionId);
    // A session that does not exist (every new session's first turn) is one statement, not
    // a transaction of three; one that does is read whole inside the transaction.
    return guardStore('load a session', this.path, () =>
      this.sql.head.get(sessionId) === undefined ? undefined : this.readSession(sessionId),
    );
  }

  async revision(sessionId: string): Promise<number | undefined> {
    assertSessionId(sessionId);
    return guardStore(
      'read a revision',
      this.path,
      () => (this.sql.head.get(sessionId) as { revision: number } | undefined)?.revision,
    );
  }

  /** A checkpoint with `releaseLease` gives the lease up in its own transaction. */
  readonly releasesLeaseOnCheckpoint: boolean = true;

  /** A checkpoint's audit entries are chained and inserted in its own transaction. */
  readonly auditsInCheckpoint: boolean = true;

  async checkpoint(checkpoint: SessionCheckpoint): Promise<number> {
    assertSessionId(checkpoint.sessionId);
    this.assertWritable('checkpoint');
    if (checkpoint.releaseLease !== undefined) assertLeaseArguments(checkpoint.sessionId, checkpoint.releaseLease);
    // Large image and file bytes go to part_blobs; the transcript keeps a reference.
    const { messages, blobs } = offloadParts(checkpoint.append);
    const encoded = encodeBatchCheckpoint(
      messages === checkpoint.append ? checkpoint : { ...checkpoint, append: messages },
    );
    return guardStore('checkpoint', this.path, () => this.writeCheckpoint(checkpoint, encoded, blobs));
  }

  /** One immediate transaction: the revision rule, the fence, the step row; the session row is created by its first step. */
  async appendSteps(append: StepAppend): Promise<number> {
    assertSessionId(append.sessionId);
    this.assertWritable('journal a step');
    if (append.fence !== undefined) assertLeaseArguments(append.sessionId, append.fence);
    const steps = encodeSteps(append);
    return guardStore('journal a step', this.path, () => this.writeSteps(append, steps));
  }

  async list(): Promise<readonly SessionSummary[]> {
    return (guardStore('list sessions', this.path, () => this.sql.list.all()) as SummaryRow[]).map((row) => ({
      id: row.id,
      agent: row.agent,
      turns: row.turns,
      updatedAt: row.updated_at,
      suspended: row.suspended === 1,
    }));
  }

  async appendTurnEvents(sessionId: string, turnIndex: number, events: readonly RecordedTurnEvent[]): Promise<void> {
    this.assertWritable('record turn events');
    guardStore('record turn events', this.path, () => this.writeTurnEvents(sessionId, turnIndex, events));
  }

  async turnEvents(sessionId: string, turnIndex: number): Promise<StoredTurnEvents> {
    const usage = guardStore('read turn events', this.path, () =>
      this.sql.selectEventUsage.get(sessionId, turnIndex),
    ) as TurnEventUsage | undefined;
    const rows = guardStore('read turn events', this.path, () =>
      this.sql.selectTurnEvents.all(sessionId, turnIndex),
    ) as { seq: number; event: string }[];
    const decode = new StoredRowDecoder(sessionId, 'file');
    const events = rows.map(
      ({ seq, event }) => decode.parse(event, `turn_events.event (turn ${turnIndex}, seq ${seq})`) as RecordedTurnEvent,
    );
    return { events, dropped: usage?.dropped ?? 0 };
  }

  async appendAudit(entries: readonly AuditEntry[]): Promise<readonly AuditRecord[]> {
    this.assertWritable('append to the audit log');
    if (entries.length === 0) return [];
    return guardStore('append to the audit log', this.path, () => this.writeAudit(entries));
  }

  async loadCredential(owner: string, name: string): Promise<string | undefined> {
    assertCredential(owner, name);
    return guardStore(
      'read a credential',
      this.path,
      () => (this.sql.selectCredential.get(owner, name) as { value: string } | undefined)?.value,
    );
  }

  async saveCredential(owner: string, name: string, value: string): Promise<void> {
    assertCredential(owner, name, value);
    this.assertWritable('keep a credential');
    guardStore('keep a credential', this.path, () =>
      this.sql.upsertCredential.run(owner, name, value, new Date().toISOString()),
    );
  }

  async deleteCredential(owner: string, name: string): Promise<void> {
    assertCredential(owner, name);
    this.assertWritable('forget a credential');
    guardStore('forget a credential', this.path, () => this.sql.deleteCredential.run(owner, name));
  }

  async readAudit(options: { readonly after?: number; readonly limit?: number } = {}): Promise<readonly AuditRecord[]> {
    const rows = guardStore('read the audit log', this.path, () =>
      this.sql.selectAudit.all(options.after ?? 0, options.limit ?? -1),
    ) as { seq: number; prev_hash: string; hash: string; entry: string }[];
    const decode = new StoredRowDecoder('(audit log)', 'file');
    return rows.map((row) => ({
      seq: row.seq,
      prevHash: row.prev_hash,
      hash: row.hash,
      entry: decode.parse(row.entry, `audit_log.entry (seq ${row.seq})`) as AuditEntry,
    }));
  }

  /** One upsert in an immediate transaction: processes sharing the file add in turn. */
  async addBudgetCount(
    key: string,
    windowStart: number,
    amount: number,
    expiresAt: number,
    now: number,
  ): Promise<number> {
    if (amount === 0)
      return guardStore(
        'read a budget count',
        this.path,
        () => (this.sql.budgetCount.get(key, windowStart) as { count: number } | undefined)?.count ?? 0,
      );
    this.assertWritable('count a budget');
    return guardStore('count a budget', this.path, () =>
      this.writeBudgetCount(key, windowStart, amount, expiresAt, now),
    );
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

  /**
   * Deletes the session and, in the same transaction, its lease (whoever holds it: a turn still
   * running there has its writes refused `LeaseLost`). Whether a session row was deleted.
   */
  async delete(sessionId: string): Promise<boolean> {
    assertSessionId(sessionId);
    this.assertWritable('delete');
    // Checkpoint rows and turn events go with the session through ON DELETE CASCADE.
    return guardStore('delete a session', this.path, () =>
      this.db
        .transaction(() => {
          this.sql.clearLease.run(sessionId);
          return this.sql.deleteSession.run(sessionId).changes > 0;
        })
        .immediate(),
    );
  }

  /**
   * Judged by this machine's clock: processes sharing a SQLite file (in WAL mode) share the
   * machine. A lease whose expiry lies further ahead than its TTL was written by a clock ahead
   * of this one (see `SessionLease`), and is taken like an expired one.
   */
  async acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean> {
    assertLeaseArguments(sessionId, holder, ttlMs);
    this.assertWritable('take a session lease');
    const now = Date.now();
    return guardStore(
      'take a session lease',
      this.path,
      () => this.sql.acquireLease.run(sessionId, holder, now + ttlMs, ttlMs, now, now).changes > 0,
    );
  }

  async renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean> {
    assertLeaseArguments(sessionId, holder, ttlMs);
    this.assertWritable('renew a session lease');
    return guardStore(
      'renew a session lease',
      this.path,
      () => this.sql.renewLease.run(Date.now() + ttlMs, ttlMs, sessionId, holder).changes > 0,
    );
  }

  async releaseLease(sessionId: string, holder: string): Promise<void> {
    assertLeaseArguments(sessionId, holder);
    this.assertWritable('release a session lease');
    guardStore('release a session lease', this.path, () => this.sql.releaseLease.run(sessionId, holder));
  }

  async listLeases(): Promise<readonly LeaseView[]> {
    const now = Date.now();
    return (guardStore('list session leases', this.path, () => this.sql.selectLeases.all()) as LeaseRow[]).map((row) =>
      leaseView(row, now),
    );
  }

  async clearLease(sessionId: string, holder?: string): Promise<LeaseView | undefined> {
    assertSessionId(sessionId);
    this.assertWritable('clear a session lease');
    const now = Date.now();
    const row = guardStore('clear a session lease', this.path, () =>
      holder === undefined ? this.sql.clearLease.get(sessionId) : this.sql.clearHeldLease.get(sessionId, holder),
    ) as LeaseRow | undefined;
    return row && leaseView(row, now);
  }

  /**
   * Rewrites the file without free pages (`VACUUM`) and empties the WAL, so erased sessions'
   * bytes are gone from disk too. Needs no other connection writing meanwhile (else `StoreBusy`).
   */
  async compact(): Promise<void> {
    this.assertWritable('compact');
    guardStore('compact the store', this.path, () => {
      this.db.pragma('wal_checkpoint(TRUNCATE)');
      this.db.exec('VACUUM');
      this.db.pragma('wal_checkpoint(TRUNCATE)');
    });
  }

  async close(): Promise<void> {
    if (this.db.open) this.db.close();
  }

  private applyCheckpoint(
    checkpoint: SessionCheckpoint,
    encoded: EncodedBatchCheckpoint,
    blobs: readonly PartBlob[],
  ): number {
    const { sessionId } = checkpoint;
    const head = this.sql.head.get(sessionId) as SqliteHead | undefined;
    // The fence first: a writer whose lease was taken over hears that, not that it is stale.
    this.assertFence(sessionId, checkpoint.fence);
    const revision = nextRevision(checkpoint, head);
    // The turn's messages are one row, numbered from where the transcript stands: nothing
    // here reads or rewrites earlier batches, so the cost follows the append, not the session.
    const seq = head?.message_count ?? 0;
    // Stamped under the write lock, so updated_at follows commit order across processes.
    const now = new Date().toISOString();
    const turnIndex = checkpoint.turn.index;
    const turns = head ? this.turnsAfter(sessionId, head, turnIndex) : { count: 1, last: turnIndex };
    // Positional parameters: binding by name costs better-sqlite3 a property lookup per name.
    if (head)
      this.sql.updateSession.run(
        revision,
        encoded.state,
        encoded.suspension,
        seq + encoded.count,
        turns.count,
        turns.last,
        now,
        sessionId,
      );
    else
      this.sql.insertSession.run(
        sessionId,
        checkpoint.agent,
        revision,
        encoded.state,
        encoded.suspension,
        seq + encoded.count,
        turns.count,
        turns.last,
        now,
        now,
      );
    for (const blob of blobs) this.sql.insertBlob.run(sessionId, blob.id, blob.data);
    // One row holds the turn's messages and its record; a resumed turn's record is a new row
    // too, and the load keeps the last record of each index.
    this.sql.insertCheckpoint.run(sessionId, seq, turnIndex, encoded.turn, encoded.messages);
    // The checkpoint ends the turn's step journal.
    if (head) this.sql.deleteSteps.run(sessionId);
    // The turn's last write: its lease ends in the same transaction (no write transaction of its own).
    if (checkpoint.releaseLease !== undefined) this.sql.releaseLease.run(sessionId, checkpoint.releaseLease);
    // The decisions this checkpoint stores are audited in the same transaction, chained under its write lock.
    if (checkpoint.audit !== undefined && checkpoint.audit.length > 0) this.insertAudit(checkpoint.audit);
    return revision;
  }

  /** Chains entries to the last record and inserts them; inside a write transaction. */
  private insertAudit(entries: readonly AuditEntry[]): AuditRecord[] {
    const records = chainAuditEntries(this.sql.lastAudit.get() as { seq: number; hash: string } | undefined, entries);
    for (const r of records) this.sql.insertAudit.run(r.seq, r.prevHash, r.hash, JSON.stringify(r.entry));
    return records;
  }

  private applySteps(append: StepAppend, steps: string): number {
    const { sessionId } = append;
    const head = this.sql.head.get(sessionId) as SqliteHead | undefined;
    this.assertFence(sessionId, append.fence);
    const revision = nextRevision(append, head);
    const now = new Date().toISOString();
    if (head) this.sql.bumpRevision.run(revision, now, sessionId);
    else this.sql.insertSession.run(sessionId, append.agent, revision, '{}', 'null', 0, 0, -1, now, now);
    this.sql.insertSteps.run(sessionId, steps);
    return revision;
  }

  /** A fenced write goes ahead only while the session's lease row names its holder (expired or not: nobody took it). */
  private assertFence(sessionId: string, fence: string | undefined): void {
    if (fence === undefined) return;
    const lease = this.sql.leaseHolder.get(sessionId) as { holder: string } | undefined;
    if (lease?.holder !== fence) throw leaseLost(sessionId);
  }

  /**
   * The session's turn count and highest turn index once turn `index` is recorded. A new
   * turn's index is above the highest, a resumed turn's is the highest: only an older index
   * (a store used out of order) asks the rows whether it was recorded.
   */
  private turnsAfter(sessionId: string, head: SqliteHead, index: number): { count: number; last: number } {
    if (index > head.last_turn_index) return { count: head.turn_count + 1, last: index };
    if (index === head.last_turn_index || this.sql.hasTurn.get(sessionId, index))
      return { count: head.turn_count, last: head.last_turn_index };
    return { count: head.turn_count + 1, last: head.last_turn_index };
  }

  private applyTurnEvents(sessionId: string, turnIndex: number, events: readonly RecordedTurnEvent[]): void {
    if (!this.sql.head.get(sessionId)) throw noSessionForEvents(sessionId);
    const usage = (this.sql.selectEventUsage.get(sessionId, turnIndex) as TurnEventUsage | undefined) ?? {
      events: 0,
      bytes: 0,
      dropped: 0,
    };
    const admitted = admitTurnEvents(sessionId, turnIndex, usage, events);
    let seq = usage.events;
    for (const row of admitted.rows) this.sql.insertTurnEvent.run(sessionId, turnIndex, seq++, row);
    this.sql.upsertEventUsage.run({ sessionId, turnIndex, ...admitted.usage });
  }

  private readRows(sessionId: string): StoredSession | undefined {
    const row = this.sql.selectSession.get(sessionId) as SessionRow | undefined;
    if (!row) return undefined;
    const decode = new StoredRowDecoder(sessionId, 'file');
    // The head's numbers drive every later checkpoint: one that is not a count would make each turn fail instead.
    for (const column of ['revision', 'message_count'] as const) {
      if (!Number.isSafeInteger(row[column]) || row[column] < 0)
        throw decode.transcriptGap(`sessions.${column}`, `${JSON.stringify(row[column])}, not a count`);
    }
    const state = decode.state(row.state, 'sessions.state');
    const rows = this.sql.selectCheckpoints.all(sessionId) as CheckpointRow[];
    const stored = readTranscript(rows, row.message_count, decode);
    const refs = referencedBlobs(stored);
    const transcript = refs.length === 0 ? stored : restoreParts(stored, this.blobsOf(sessionId, refs), sessionId);
    const turns = readTurns(rows, decode);
    const stepRows = this.sql.selectSteps.all(sessionId) as { id: number; steps: string }[];
    const steps =
      stepRows.length === 0 ? undefined : stepRows.flatMap((step) => decode.steps(step.steps, step.id, 'turn_steps'));
    return {
      id: row.id,
      agent: row.agent,
      createdAt: row.created_at,
      updatedAt: row.updated_at,
      revision: row.revision,
      state,
      transcript,
      turns,
      suspension: decode.parse(row.suspension, 'sessions.suspension'),
      ...(steps && { steps }),
    };
  }

  private blobsOf(sessionId: string, ids: readonly string[]): Map<string, string> {
    const found = new Map<string, string>();
    for (const id of ids) {
      const row = this.sql.selectBlob.get(sessionId, id) as { data: string } | undefined;
      if (row) found.set(id, row.data);
    }
    return found;
  }

  private assertWritable(operation: string): void {
    if (!this.readonly) return;
    throw new TrellisError(
      'InvalidOptions',
      `Cannot ${operation}: the SQLite store at ${this.path} was opened readonly`,
      {
        hint: 'Open it without `readonly: true` to write',
      },
    );
  }
}

// Sealed: a plugin in the same process cannot patch SqliteStore's methods to capture sessions or transcripts (issue 34).
Object.freeze(SqliteStore.prototype);
Object.freeze(SqliteStore);

/** One row of `session_leases`; `expires_at` is epoch milliseconds unless the row was damaged. */
interface LeaseRow {
  readonly session_id: string;
  readonly holder: string;
  readonly expires_at: unknown;
  readonly ttl_ms: unknown;
}

function leaseView(row: LeaseRow, now: number): LeaseView {
  const time =
    typeof row.expires_at === 'number' && Number.isFinite(row.expires_at) && Math.abs(row.expires_at) <= 8.64e15
      ? new Date(row.expires_at).toISOString()
      : undefined;
  return {
    sessionId: row.session_id,
    holder: row.holder,
    expiresAt: time,
    ttlMs: typeof row.ttl_ms === 'number' ? row.ttl_ms : 0,
    state: leaseState(row.expires_at, row.ttl_ms, now),
  };
}

/** One row of `checkpoints`: the messages a checkpoint appended and the turn record it wrote. */
interface CheckpointRow {
  readonly seq: number;
  /** Null in a row migrated from a schema-5 message batch. */
  readonly turn_index: number | null;
  readonly record: string | null;
  readonly messages: string;
}

/**
 * The transcript from the rows' batches, in order. Each batch must start where the previous
 * one ended and the total must be the session row's count: a deleted or extra row fails the
 * load instead of returning a transcript with a hole in it.
 */
function readTranscript(rows: readonly CheckpointRow[], count: number, decode: StoredRowDecoder): ChatMessage[] {
  const transcript: ChatMessage[] = [];
  for (const { seq, messages } of rows) {
    if (seq !== transcript.length) {
      throw decode.transcriptGap(
        `checkpoints (batch from seq ${seq})`,
        `not where the transcript continues (seq ${transcript.length}): a batch is missing or was added`,
      );
    }
    for (const message of decode.messageBatch(messages, seq, 'checkpoints')) transcript.push(message);
  }
  if (transcript.length !== count) {
    throw decode.transcriptGap(
      'sessions.message_count',
      `${count}, but the stored batches hold ${transcript.length} messages`,
    );
  }
  return transcript;
}

/**
 * The turn records by index, the last written of each (a resumed turn writes its record
 * again). Only those are decoded: a record that was replaced is not read.
 */
function readTurns(rows: readonly CheckpointRow[], decode: StoredRowDecoder): TurnRecord[] {
  const records = new Map<number, string>();
  for (const { turn_index, record } of rows)
    if (turn_index !== null && record !== null) records.set(turn_index, record);
  return [...records.keys()]
    .sort((a, b) => a - b)
    .map((index) => decode.turn(records.get(index)!, index, 'checkpoints'));
}

/**
 * better-sqlite3 (a native CommonJS addon), required when the first store opens rather than
 * when Trellis is imported; `require` keeps the constructor synchronous.
 */
export function loadDriver(): typeof Database {
  try {
    return createRequire(import.meta.url)('better-sqlite3') as typeof Database;
  } catch (error) {
    throw new TrellisError('InvalidOptions', 'Cannot load better-sqlite3, which SqliteStore needs', {
      kind: 'system',
      hint: 'Install it with `npm install better-sqlite3@12`; its native build must match this Node version',
      cause: error,
    });
  }
}

/** Brings an existing file to the current schema through a short-lived writable connection. */
function migrateOnce(path: string): void {
  if (path === ':memory:' || !existsSync(path)) return;
  const db = openDatabase(path, false);
  db.close();
}

function openDatabase(path: string, readonly: boolean): Database.Database {
  const inMemory = path === ':memory:';
  if (!inMemory && !readonly) {
    try {
      mkdirSync(dirname(path), { recursive: true });
    } catch (error) {
      throw storeFileError(
        path,
        `its folder ${dirname(path)} cannot be created (${(error as NodeJS.ErrnoException).code ?? 'error'})`,
        'StoreIO',
        `Point the store at a path whose folder exists or can be created; ${dirname(path)} or a folder above it is a file, or not writable`,
        error,
      );
    }
    assertWritableFile(path);
  }
  const Driver = loadDriver();
  let db: Database.Database;
  try {
    // `timeout` is SQLite's busy_timeout: a second process waits for the lock instead of failing.
    db = new Driver(path, { readonly, fileMustExist: readonly, timeout: 5000 });
  } catch (error) {
    if (readonly && (error as { code?: unknown })?.code === 'SQLITE_CANTOPEN') {
      throw asTrellisError(error, 'InvalidOptions', `Cannot open the SQLite store at ${path}`, {
        hint: 'A readonly store needs an existing database file',
        details: { path },
      });
    }
    throw sqliteStoreError(error, 'open', path);
  }
  try {
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      // NORMAL is durable across process crashes in WAL mode; only a power cut may lose the last commits.
      db.pragma('synchronous = NORMAL');
    }
    db.pragma('foreign_keys = ON');
    // SQLite's own default page cache (2 MB), not better-sqlite3's 16 MB: while the cache
    // grows, each page the file gains takes a fresh heap page, and a page fault costs more
    // than re-reading an evicted page (docs/performance.md, "What keeps it fast").
    db.pragma('cache_size = -2000');
    if (readonly) assertSchemaCurrent(db);
    else applyMigrations(db);
    return db;
  } catch (error) {
    db.close();
    throw sqliteStoreError(error, 'open', path);
  }
}

/**
 * A store opened for writing on a file this process cannot write fails at once, saying so,
 * rather than open (SQLite falls back to reading) and fail at the first lease.
 */
function assertWritableFile(path: string): void {
  let fd: number;
  try {
    if (!statSync(path).isFile())
      throw storeFileError(
        path,
        'it is not a regular file',
        'StoreIO',
        `Point the store at a database file; ${path} is a folder or a device`,
      );
    fd = openSync(path, 'r+');
  } catch (error) {
    if (TrellisError.is(error)) throw error;
    const code = (error as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') return;
    if (code === 'EACCES' || code === 'EPERM' || code === 'EROFS') {
      throw storeFileError(
        path,
        `the file cannot be written (${code})`,
        'StoreReadonly',
        `Give this process write access to ${path} and its folder (SQLite creates -wal and -shm files beside it), or open it with { readonly: true } to read`,
        error,
      );
    }
    throw storeFileError(
      path,
      `the file cannot be opened (${code ?? 'error'})`,
      'StoreIO',
      `Check ${path} and the disk holding it`,
      error,
    );
  }
  closeSync(fd);
}

function storeFileError(
  path: string,
  what: string,
  code: 'StoreIO' | 'StoreReadonly',
  hint: string,
  cause?: unknown,
): TrellisError {
  return new TrellisError(code, `The session store at ${path} cannot be opened: ${what}`, {
    hint,
    kind: 'system',
    details: { path, operation: 'open' },
    ...(cause !== undefined && { cause }),
  });
}

function prepareStatements(db: Database.Database) {
  return {
    head: db.prepare('SELECT agent, revision, message_count, turn_count, last_turn_index FROM sessions WHERE id = ?'),
    insertSession: db.prepare(
      'INSERT INTO sessions (id, agent, revision, state, suspension, message_count, turn_count, last_turn_index, created_at, updated_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    updateSession: db.prepare(
      'UPDATE sessions SET revision = ?, state = ?, suspension = ?, message_count = ?, turn_count = ?, last_turn_index = ?, updated_at = ? WHERE id = ?',
    ),
    insertCheckpoint: db.prepare(
      'INSERT INTO checkpoints (session_id, seq, turn_index, record, messages) VALUES (?, ?, ?, ?, ?)',
    ),
    hasTurn: db.prepare(
      'SELECT 1 FROM checkpoints WHERE session_id = ? AND turn_index = ? AND record IS NOT NULL LIMIT 1',
    ),
    selectSession: db.prepare(
      'SELECT id, agent, revision, state, suspension, message_count, created_at, updated_at FROM sessions WHERE id = ?',
    ),
    // The index on session_id lists a session's rows in id (rowid) order: no sort.
    selectCheckpoints: db.prepare(
      'SELECT seq, turn_index, record, messages FROM checkpoints WHERE session_id = ? ORDER BY id',
    ),
    list: db.prepare(
      `SELECT id, agent, updated_at, suspension <> 'null' AS suspended, turn_count AS turns
       FROM sessions ORDER BY updated_at DESC, id`,
    ),
    deleteSession: db.prepare('DELETE FROM sessions WHERE id = ?'),
    // Content-addressed within a session: the same bytes sent twice are stored once.
    insertBlob: db.prepare('INSERT OR IGNORE INTO part_blobs (session_id, id, data) VALUES (?, ?, ?)'),
    selectBlob: db.prepare('SELECT data FROM part_blobs WHERE session_id = ? AND id = ?'),
    selectEventUsage: db.prepare(
      'SELECT events, bytes, dropped FROM turn_event_usage WHERE session_id = ? AND turn_index = ?',
    ),
    upsertEventUsage: db.prepare(
      `INSERT INTO turn_event_usage (session_id, turn_index, events, bytes, dropped) VALUES (@sessionId, @turnIndex, @events, @bytes, @dropped)
       ON CONFLICT (session_id, turn_index) DO UPDATE SET events = excluded.events, bytes = excluded.bytes, dropped = excluded.dropped`,
    ),
    insertTurnEvent: db.prepare('INSERT INTO turn_events (session_id, turn_index, seq, event) VALUES (?, ?, ?, ?)'),
    selectTurnEvents: db.prepare(
      'SELECT seq, event FROM turn_events WHERE session_id = ? AND turn_index = ? ORDER BY seq',
    ),
    // The upsert's WHERE decides: a live lease of another holder is left alone (0 changes). Live
    // is `leaseState`'s rule: an expiry that is a time after now, but not beyond now + its TTL
    // (+ the tolerance); anything else was let go, or written by a clock ahead of this one.
    // Parameters (session id, holder, expires at, ttl, now, now) are positional, as in the checkpoint's statements.
    acquireLease: db.prepare(
      `INSERT INTO session_leases (session_id, holder, expires_at, ttl_ms) VALUES (?, ?, ?, ?)
       ON CONFLICT (session_id) DO UPDATE SET holder = excluded.holder, expires_at = excluded.expires_at, ttl_ms = excluded.ttl_ms
       WHERE session_leases.holder = excluded.holder
          OR NOT (typeof(session_leases.expires_at) IN ('integer', 'real') AND session_leases.expires_at > ?
                  AND session_leases.expires_at <= ? + session_leases.ttl_ms + ${LEASE_CLOCK_TOLERANCE_MS})`,
    ),
    renewLease: db.prepare('UPDATE session_leases SET expires_at = ?, ttl_ms = ? WHERE session_id = ? AND holder = ?'),
    selectLeases: db.prepare('SELECT session_id, holder, expires_at, ttl_ms FROM session_leases ORDER BY session_id'),
    clearLease: db.prepare(
      'DELETE FROM session_leases WHERE session_id = ? RETURNING session_id, holder, expires_at, ttl_ms',
    ),
    clearHeldLease: db.prepare(
      'DELETE FROM session_leases WHERE session_id = ? AND holder = ? RETURNING session_id, holder, expires_at, ttl_ms',
    ),
    releaseLease: db.prepare('DELETE FROM session_leases WHERE session_id = ? AND holder = ?'),
    leaseHolder: db.prepare('SELECT holder FROM session_leases WHERE session_id = ?'),
    bumpRevision: db.prepare('UPDATE sessions SET revision = ?, updated_at = ? WHERE id = ?'),
    insertSteps: db.prepare('INSERT INTO turn_steps (session_id, steps) VALUES (?, ?)'),
    selectSteps: db.prepare('SELECT id, steps FROM turn_steps WHERE session_id = ? ORDER BY id'),
    deleteSteps: db.prepare('DELETE FROM turn_steps WHERE session_id = ?'),
    lastAudit: db.prepare('SELECT seq, hash FROM audit_log ORDER BY seq DESC LIMIT 1'),
    insertAudit: db.prepare('INSERT INTO audit_log (seq, prev_hash, hash, entry) VALUES (?, ?, ?, ?)'),
    selectAudit: db.prepare('SELECT seq, prev_hash, hash, entry FROM audit_log WHERE seq > ? ORDER BY seq LIMIT ?'),
    addBudgetCount: db.prepare(
      `INSERT INTO budget_counts (key, window_start, count, expires_at) VALUES (?, ?, ?, ?)
       ON CONFLICT (key, window_start) DO UPDATE SET count = count + excluded.count RETURNING count`,
    ),
    budgetCount: db.prepare('SELECT count FROM budget_counts WHERE key = ? AND window_start = ?'),
    dropExpiredBudgets: db.prepare('DELETE FROM budget_counts WHERE expires_at < ?'),
    selectCredential: db.prepare('SELECT value FROM credentials WHERE owner = ? AND name = ?'),
    upsertCredential: db.prepare(
      'INSERT INTO credentials (owner, name, value, updated_at) VALUES (?, ?, ?, ?) ON CONFLICT (owner, name) DO UPDATE SET value = excluded.value, updated_at = excluded.updated_at',
    ),
    deleteCredential: db.prepare('DELETE FROM credentials WHERE owner = ? AND name = ?'),
  };
}
