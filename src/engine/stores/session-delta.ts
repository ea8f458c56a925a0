import type { ChatMessage } from '../../contract/model-provider.js';
import type { SessionStore, TurnRecord } from './session-store.js';

/** How much of a session a cached copy holds: what {@link SessionDeltaReader.loadSince} need not send again. */
export interface LoadedExtent {
  /** The revision the copy is at. */
  readonly revision: number;
  /** Transcript messages the copy holds (stored seqs `0 … messages - 1`). */
  readonly messages: number;
  /** One past the highest turn index the copy holds. */
  readonly turns: number;
  /**
   * When the session the copy holds was created (`StoredSession.createdAt`), if the copy
   * knows: a session created again under the same id since is reported moved, never `unchanged`.
   */
  readonly createdAt?: string;
}

/**
 * What changed in a session since a copy's {@link LoadedExtent}: nothing (`unchanged`), or
 * its new revision, state and suspension whole, the transcript messages after the copy's,
 * the turn records from the copy's last one on (a resumed turn replaces its record), and
 * the running turn's steps. `createdAt` and `messageCount` let the copy check that the
 * delta continues it; one that does not (`messageCount` is not the copy's messages plus the
 * new ones, or the session was created again) calls for a whole load.
 */
export type SessionDelta =
  | { readonly unchanged: true; readonly revision: number; readonly createdAt: string }
  | {
      readonly unchanged: false;
      readonly agent: string;
      readonly revision: number;
      readonly createdAt: string;
      readonly updatedAt: string;
      /** Messages the stored transcript holds in all. */
      readonly messageCount: number;
      readonly state: Readonly<Record<string, unknown>>;
      readonly suspension: unknown;
      /** Messages from stored seq `since.messages` on, in order. */
      readonly transcript: readonly ChatMessage[];
      /** Turn records from index `since.turns - 1` on, by index. */
      readonly turns: readonly TurnRecord[];
      readonly steps?: readonly unknown[];
    };

/**
 * An optional capability of a {@link SessionStore}: the changes to a session since a cached
 * copy, in one read. A session object that another process wrote since it was cached here
 * catches up with the rows added meanwhile instead of reloading the whole session, so the
 * rows read per turn do not grow with the session's length or with the number of processes
 * its turns hop between. `PostgresStore` has it.
 */
export interface SessionDeltaReader {
  /** Undefined when the session is not (or no longer) in the store. */
  loadSince(sessionId: string, since: LoadedExtent): Promise<SessionDelta | undefined>;
}

/** Whether `store` reads sessions by delta. */
export function canLoadSince(store: SessionStore | undefined): store is SessionStore & SessionDeltaReader {
  return typeof (store as Partial<SessionDeltaReader> | undefined)?.loadSince === 'function';
}
