import type { ChatMessage } from '../../contract/model-provider.js';
import { assertSessionId } from './session-id.js';
import { encodeCheckpoint, encodeSteps } from './checkpoint-codec.js';
import { nextRevision } from './checkpoint-revision.js';
import { performance } from 'node:perf_hooks';
import { assertLeaseArguments, leaseState, type LeaseAdmin, type LeaseView } from './session-lease.js';
import type {
  RevisionReader,
  SessionCheckpoint,
  SessionStore,
  SessionSummary,
  StoredSession,
  TurnRecord,
} from './session-store.js';
import { leaseLost, type StepAppend, type StepJournal } from './step-journal.js';
import { admitTurnEvents, noSessionForEvents, type TurnEventUsage } from './turn-event-budget.js';
import type { RecordedTurnEvent, StoredTurnEvents, TurnEventLog } from './turn-event-log.js';
import { assertCredential, type CredentialStore } from './credential-store.js';
import { chainAuditEntries } from './audit-chain.js';
import type { AuditEntry, AuditLog, AuditRecord } from './audit-log.js';
import { MemoryRecords } from './memory-records.js';
import type { RecordSelector, RecordStore, StoredRecord } from './record-store.js';

/** A lease in memory: `expiresAt` on the process's monotonic clock, which a change of the wall clock cannot move. */
interface MemoryLease {
  readonly holder: string;
  expiresAt: number;
  ttlMs: number;
}

interface MemorySession {
  readonly id: string;
  readonly agent: string;
  readonly createdAt: string;
  updatedAt: string;
  revision: number;
  state: Record<string, unknown>;
  readonly transcript: ChatMessage[];
  readonly turns: TurnRecord[];
  suspension: unknown;
  /** The running turn's steps since the last checkpoint, as JSON text, oldest first. */
  steps: string[];
  /** Per turn index: the serialized events and the budget used. */
  readonly turnEvents: Map<number, { rows: string[]; usage: TurnEventUsage }>;
}

/**
 * A {@link SessionStore} in process memory, for tests and throwaway runs. It keeps deep
 * copies going in and coming out, so neither the caller nor the kernel can change a
 * stored session except through `checkpoint`, whose rules match {@link SqliteStore}.
 *
 * @example
 * const app = await Trellis.create({ store: new MemoryStore() });
 */
export class MemoryStore
  implements SessionStore, RevisionReader, TurnEventLog, StepJournal, AuditLog, LeaseAdmin, CredentialStore, RecordStore
{
  private readonly sessions = new Map<string, MemorySession>();
  private readonly leases = new Map<string, MemoryLease>();
  /** The audit log as JSON text per record, so a caller holding a record cannot change the stored one. */
  private readonly audit: string[] = [];
  /** Credentials by `JSON.stringify([owner, name])`. */
  private readonly credentials = new Map<string, string>();
  private readonly records = new MemoryRecords();

  async load(sessionId: string): Promise<StoredSession | undefined> {
    assertSessionId(sessionId);
    const session = this.sessions.get(sessionId);
    if (!session) return undefined;
    const { turnEvents: _events, steps, ...stored } = session;
    const copy: StoredSession = structuredClone(stored);
    if (steps.length === 0) return copy;
    return { ...copy, steps: steps.flatMap((batch) => JSON.parse(batch) as unknown[]) };
  }

  async revision(sessionId: string): Promise<number | undefined> {
    assertSessionId(sessionId);
    return this.sessions.get(sessionId)?.revision;
  }

  /** A checkpoint with `releaseLease` gives the lease up once it is written. */
  readonly releasesLeaseOnCheckpoint: boolean = true;

  /** A checkpoint's audit entries are appended with it (nothing in between can fail). */
  readonly auditsInCheckpoint: boolean = true;

  async checkpoint(checkpoint: SessionCheckpoint): Promise<number> {
    assertSessionId(checkpoint.sessionId);
    if (checkpoint.releaseLease !== undefined) assertLeaseArguments(checkpoint.sessionId, checkpoint.releaseLease);
    const existing = this.sessions.get(checkpoint.sessionId);
    // The fence first: a writer whose lease was taken over hears that, not that it is stale.
    this.assertFence(checkpoint.sessionId, checkpoint.fence);
    const revision = nextRevision(checkpoint, existing);
    // Refuse what a durable store would refuse (BigInt, cycles), so tests on memory do not pass by luck.
    encodeCheckpoint(checkpoint);
    // Clone everything before touching the stored session: a clone that throws leaves it as it was.
    const { state, append, turn, suspension } = structuredClone({
      state: checkpoint.state,
      append: checkpoint.append,
      turn: checkpoint.turn,
      suspension: checkpoint.suspension ?? null,
    });
    const audit =
      checkpoint.audit !== undefined && checkpoint.audit.length > 0 ? structuredClone(checkpoint.audit) : undefined;
    const now = new Date().toISOString();
    const session: MemorySession = existing ?? {
      id: checkpoint.sessionId,
      agent: checkpoint.agent,
      createdAt: now,
      updatedAt: now,
      revision: 0,
      state: {},
      transcript: [],
      turns: [],
      suspension: null,
      steps: [],
      turnEvents: new Map(),
    };
    session.transcript.push(...append);
    session.steps = [];
    putTurn(session.turns, turn);
    session.state = state;
    session.suspension = suspension;
    session.revision = revision;
    session.updatedAt = now;
    this.sessions.set(session.id, session);
    if (checkpoint.releaseLease !== undefined && this.leases.get(session.id)?.holder === checkpoint.releaseLease)
      this.leases.delete(session.id);
    if (audit !== undefined) this.chainAudit(audit);
    return revision;
  }

  /** Appends a running turn's steps; the session is created by the first step of its first turn. */
  async appendSteps(append: StepAppend): Promise<number> {
    assertSessionId(append.sessionId);
    const existing = this.sessions.get(append.sessionId);
    this.assertFence(append.sessionId, append.fence);
    const revision = nextRevision(append, existing);
    const steps = encodeSteps(append);
    const now = new Date().toISOString();
    const session: MemorySession = existing ?? {
      id: append.sessionId,
      agent: append.agent,
      createdAt: now,
      updatedAt: now,
      revision: 0,
      state: {},
      transcript: [],
      turns: [],
      suspension: null,
      steps: [],
      turnEvents: new Map(),
    };
    session.steps.push(steps);
    session.revision = revision;
    session.updatedAt = now;
    this.sessions.set(session.id, session);
    return revision;
  }

  async list(): Promise<readonly SessionSummary[]> {
    return [...this.sessions.values()]
      .map((s) => ({
        id: s.id,
        agent: s.agent,
        turns: s.turns.length,
        updatedAt: s.updatedAt,
        suspended: s.suspension !== null,
      }))
      .sort((a, b) => (a.updatedAt === b.updatedAt ? a.id.localeCompare(b.id) : a.updatedAt < b.updatedAt ? 1 : -1));
  }

  async appendTurnEvents(sessionId: string, turnIndex: number, events: readonly RecordedTurnEvent[]): Promise<void> {
    const session = this.sessions.get(sessionId);
    if (!session) throw noSessionForEvents(sessionId);
    const log = session.turnEvents.get(turnIndex) ?? { rows: [], usage: { events: 0, bytes: 0, dropped: 0 } };
    const admitted = admitTurnEvents(sessionId, turnIndex, log.usage, events);
    session.turnEvents.set(turnIndex, { rows: [...log.rows, ...admitted.rows], usage: admitted.usage });
  }

  async turnEvents(sessionId: string, turnIndex: number): Promise<StoredTurnEvents> {
    const log = this.sessions.get(sessionId)?.turnEvents.get(turnIndex);
    if (!log) return { events: [], dropped: 0 };
    return { events: log.rows.map((row) => JSON.parse(row) as RecordedTurnEvent), dropped: log.usage.dropped };
  }

  async appendAudit(entries: readonly AuditEntry[]): Promise<readonly AuditRecord[]> {
    return this.chainAudit(entries);
  }

  private chainAudit(entries: readonly AuditEntry[]): AuditRecord[] {
    const last = this.audit.length === 0 ? undefined : (JSON.parse(this.audit.at(-1)!) as AuditRecord);
    const records = chainAuditEntries(last, structuredClone(entries));
    this.audit.push(...records.map((r) => JSON.stringify(r)));
    return records;
  }

  async readAudit(options: { readonly after?: number; readonly limit?: number } = {}): Promise<readonly AuditRecord[]> {
    const from = Math.max(0, options.after ?? 0);
    const rows = this.audit.slice(from, options.limit === undefined ? undefined : from + options.limit);
    return rows.map((row) => JSON.parse(row) as AuditRecord);
  }

  async loadCredential(owner: string, name: string): Promise<string | undefined> {
    assertCredential(owner, name);
    return this.credentials.get(JSON.stringify([owner, name]));
  }

  async saveCredential(owner: string, name: string, value: string): Promise<void> {
    assertCredential(owner, name, value);
    this.credentials.set(JSON.stringify([owner, name]), value);
  }

  async deleteCredential(owner: string, name: string): Promise<void> {
    assertCredential(owner, name);
    this.credentials.delete(JSON.stringify([owner, name]));
  }

  /** Deletes the session and its lease (whoever holds it: a turn still running there has its writes refused `LeaseLost`). */
  async delete(sessionId: string): Promise<boolean> {
    assertSessionId(sessionId);
    this.leases.delete(sessionId);
    return this.sessions.delete(sessionId);
  }

  /** A fenced write goes ahead only while the session's lease names its holder (expired or not: nobody took it). */
  private assertFence(sessionId: string, fence: string | undefined): void {
    if (fence !== undefined && this.leases.get(sessionId)?.holder !== fence) throw leaseLost(sessionId);
  }

  /** Judged by the process's monotonic clock: the store lives in this process, and no change of the wall clock moves an expiry. */
  async acquireLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean> {
    assertLeaseArguments(sessionId, holder, ttlMs);
    const now = performance.now();
    const lease = this.leases.get(sessionId);
    if (lease && lease.holder !== holder && lease.expiresAt > now) return false;
    this.leases.set(sessionId, { holder, expiresAt: now + ttlMs, ttlMs });
    return true;
  }

  async renewLease(sessionId: string, holder: string, ttlMs: number): Promise<boolean> {
    assertLeaseArguments(sessionId, holder, ttlMs);
    const lease = this.leases.get(sessionId);
    if (lease?.holder !== holder) return false;
    lease.expiresAt = performance.now() + ttlMs;
    lease.ttlMs = ttlMs;
    return true;
  }

  async releaseLease(sessionId: string, holder: string): Promise<void> {
    assertLeaseArguments(sessionId, holder);
    if (this.leases.get(sessionId)?.holder === holder) this.leases.delete(sessionId);
  }

  async listLeases(): Promise<readonly LeaseView[]> {
    return [...this.leases.keys()].sort().map((id) => this.leaseView(id, this.leases.get(id)!));
  }

  async clearLease(sessionId: string, holder?: string): Promise<LeaseView | undefined> {
    assertSessionId(sessionId);
    const lease = this.leases.get(sessionId);
    if (lease === undefined || (holder !== undefined && lease.holder !== holder)) return undefined;
    this.leases.delete(sessionId);
    return this.leaseView(sessionId, lease);
  }

  private leaseView(sessionId: string, lease: MemoryLease): LeaseView {
    const now = performance.now();
    return {
      sessionId,
      holder: lease.holder,
      expiresAt: new Date(Date.now() + (lease.expiresAt - now)).toISOString(),
      ttlMs: lease.ttlMs,
      state: leaseState(lease.expiresAt, lease.ttlMs, now),
    };
  }

  /** Keeps the sessions: one MemoryStore may outlive an app, e.g. to resume in a second app as if in another process. */
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

  async close(): Promise<void> {}
}

// Sealed: a plugin in the same process cannot patch MemoryStore's methods to capture sessions or transcripts (issue 34).
Object.freeze(MemoryStore.prototype);
Object.freeze(MemoryStore);

/** Replaces the record with the same index, else inserts it; turns stay ordered by index like SQLite's. */
function putTurn(turns: TurnRecord[], turn: TurnRecord): void {
  const at = turns.findIndex((t) => t.index >= turn.index);
  if (at === -1) turns.push(turn);
  else if (turns[at]!.index === turn.index) turns[at] = turn;
  else turns.splice(at, 0, turn);
}
