import { TrellisError } from '../../errors/trellis-error.js';
import type { SessionStore } from './session-store.js';

/**
 * One write of a running turn's steps (docs/durable-steps.md): the model responses and tool results
 * that completed since the last write, journalled before the turn's next step starts.
 */
export interface StepAppend {
  readonly sessionId: string;
  /** The session's agent: the first step of a new session's first turn creates its row. */
  readonly agent: string;
  /**
   * The revision the writer last saw (its load, checkpoint or step write); a mismatch fails
   * with `StaleState` and writes nothing, as a checkpoint would.
   */
  readonly expectedRevision: number;
  /** The steps, oldest first: JSON values, opaque to the store, given back in `StoredSession.steps`. */
  readonly steps: readonly unknown[];
  /**
   * The lease holder the writer runs under. The store refuses the write with `LeaseLost`
   * (and writes nothing) unless the session's lease row names this holder: a writer whose
   * lease lapsed and was taken over cannot add a step beside the new holder.
   */
  readonly fence?: string;
}

/**
 * An optional capability of a {@link SessionStore}: the step journal of the turn a session
 * is running. Every append is atomic and bumps the session's revision like a checkpoint
 * (so a reader that compares revisions sees a turn in progress, and a stale writer is
 * refused); the next checkpoint removes the steps in its own transaction. `load` returns
 * the steps appended since the last checkpoint as `StoredSession.steps`, in order.
 * `MemoryStore`, `SqliteStore` and `PostgresStore` have it; a store without it runs turns
 * without a step journal (a turn cut off by a crash then starts over).
 */
export interface StepJournal {
  /** Appends steps to the session's running turn; returns the session's new revision. */
  appendSteps(append: StepAppend): Promise<number>;
}

/** Whether `store` keeps a step journal. */
export function canJournalSteps(store: SessionStore | undefined): store is SessionStore & StepJournal {
  return typeof (store as Partial<StepJournal> | undefined)?.appendSteps === 'function';
}

/** The error of a write whose fence (lease holder) no longer holds the session. */
export function leaseLost(sessionId: string): TrellisError {
  return new TrellisError(
    'LeaseLost',
    `Session '${sessionId}' is held by another writer now: this writer's lease lapsed and was taken over, so the write was refused and nothing of it landed`,
    {
      hint: 'Nothing to retry here: the writer that holds the session goes on with its turn. Keep pauses (GC, a stopped VM) well below the lease TTL',
      details: { sessionId },
    },
  );
}
