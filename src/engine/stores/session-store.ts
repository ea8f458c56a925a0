import type { ChatMessage, Usage } from '../../contract/model-provider.js';
import type { SessionLease } from './session-lease.js';
import type { AuditEntry } from './audit-log.js';

/** The stored summary of one finished (or suspended) turn. */
export interface TurnRecord {
  readonly index: number;
  /**
   * The turn's key: the caller's (`SendOptions.key`, a queued job's key) or one made for it.
   * A `send` with a key the session already recorded answers with that turn, running nothing.
   */
  readonly key?: string;
  readonly input: string;
  readonly status: 'completed' | 'suspended' | 'blocked' | 'cancelled' | 'max_rounds' | 'failed';
  readonly reply?: string;
  readonly rounds: number;
  readonly toolCalls: number;
  /** Token usage summed per model. */
  readonly usage: Readonly<Record<string, Usage>>;
  readonly startedAt: string;
  readonly endedAt: string;
  readonly error?: { readonly code: string; readonly message: string };
  /** A typed turn's answer (`TurnResult.output`) as plain JSON: a retried send with the turn's key answers with it. */
  readonly output?: unknown;
}

/** A session as the store holds it. */
export interface StoredSession {
  readonly id: string;
  readonly agent: string;
  readonly createdAt: string;
  readonly updatedAt: string;
  /** Bumped by every checkpoint; a checkpoint built on an older one is refused. */
  readonly revision: number;
  /** Persistent session-level state and host context (`app.*`), by key. */
  readonly state: Readonly<Record<string, unknown>>;
  readonly transcript: readonly ChatMessage[];
  readonly turns: readonly TurnRecord[];
  /** The versioned record of a suspended turn, or null. Opaque to the store: the agent validates it. */
  readonly suspension: unknown;
  /**
   * The steps of a turn that is running, or that a crash cut off: what `StepJournal.appendSteps`
   * wrote since the last checkpoint, oldest first. Absent when there are none (and from
   * stores without a step journal). Opaque to the store: the agent validates them.
   */
  readonly steps?: readonly unknown[];
}

/** Everything one turn leaves behind, written atomically: all of it or none of it. */
export interface SessionCheckpoint {
  readonly sessionId: string;
  readonly agent: string;
  /** The revision the turn started from (0 for a new session); a mismatch fails with `StaleState`. */
  readonly expectedRevision: number;
  readonly state: Readonly<Record<string, unknown>>;
  /** Messages to append to the transcript. */
  readonly append: readonly ChatMessage[];
  /** The turn's record; a checkpoint of a resumed turn replaces the record with the same index. */
  readonly turn: TurnRecord;
  /** The suspension left open by this turn, or null when none is. */
  readonly suspension: unknown;
  /**
   * The holder of the session's lease, when this checkpoint is the last write of its turn. A
   * store whose `releasesLeaseOnCheckpoint` is true gives that holder's lease up in the
   * checkpoint's own transaction, once the checkpoint is written (a refused checkpoint leaves
   * it held); other stores ignore it, and the kernel releases the lease with `releaseLease`.
   */
  readonly releaseLease?: string;
  /**
   * The lease holder the turn runs under: the store refuses the checkpoint with `LeaseLost`
   * (and writes nothing) unless the session's lease row names it. Stores without a step
   * journal may ignore it.
   */
  readonly fence?: string;
  /**
   * Approval decisions this checkpoint stores (a resume's claim), for the audit log: a store
   * whose `auditsInCheckpoint` is true appends them in the checkpoint's own transaction, so the
   * decision and its entry are written together or not at all; other stores ignore them (the
   * kernel appends them right after).
   */
  readonly audit?: readonly AuditEntry[];
}

export interface SessionSummary {
  readonly id: string;
  readonly agent: string;
  readonly turns: number;
  readonly updatedAt: string;
  readonly suspended: boolean;
}

/**
 * Where sessions live between turns. `checkpoint` is atomic: after a crash the store
 * holds the previous checkpoint whole, never part of a new one; it also ends the step
 * journal of the turn it records (`StepJournal`, an optional capability). The lease
 * ({@link SessionLease}) keeps one writer per session at a time.
 */
export interface SessionStore extends SessionLease {
  load(sessionId: string): Promise<StoredSession | undefined>;
  /** Returns the new revision. */
  checkpoint(checkpoint: SessionCheckpoint): Promise<number>;
  /**
   * True when `checkpoint` honours `releaseLease`: a turn's lease then ends with its last
   * checkpoint, one write fewer per turn. Absent or false: the kernel calls `releaseLease`.
   */
  readonly releasesLeaseOnCheckpoint?: boolean;
  /** True when `checkpoint` appends `SessionCheckpoint.audit` to the store's audit log in the same transaction. */
  readonly auditsInCheckpoint?: boolean;
  list(): Promise<readonly SessionSummary[]>;
  /**
   * Deletes the session with everything stored of it, and its lease, whoever holds it (a turn
   * still running there then has its fenced writes refused `LeaseLost`, and cannot write the
   * deleted session back). Whether a session was stored.
   */
  delete(sessionId: string): Promise<boolean>;
  close(): Promise<void>;
}

/**
 * An optional capability: the stored revision of a session, read cheaply. With it, a
 * session object notices before a turn that another process checkpointed the session
 * since, and reloads instead of failing with `StaleState` after the turn ran.
 */
export interface RevisionReader {
  revision(sessionId: string): Promise<number | undefined>;
}

/**
 * An optional capability: rewrites the store so that deleted rows leave no bytes behind (free
 * pages, old WAL frames). `app.erase` calls it after deleting sessions. Costs a rewrite of the
 * whole store: for erasure and retention runs, not for every delete.
 */
export interface Compactable {
  compact(): Promise<void>;
}

export function canCompact(store: SessionStore): store is SessionStore & Compactable {
  return typeof (store as Partial<Compactable>).compact === 'function';
}

export function canReadRevision(store: SessionStore): store is SessionStore & RevisionReader {
  return typeof (store as Partial<RevisionReader>).revision === 'function';
}

export { SESSION_STORE } from '../../contract/plugin-tokens.js';
