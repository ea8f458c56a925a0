import { TrellisError } from '../../errors/trellis-error.js';
import type { SessionCheckpoint } from './session-store.js';

/** What a store knows about a session before it applies a checkpoint to it. */
export interface StoredHead {
  readonly agent: string;
  readonly revision: number;
}

/**
 * The optimistic-concurrency rule every store applies, so that all stores refuse the
 * same checkpoints: revision 0 creates a session that must not exist yet; any other
 * revision must match the stored one, for the same agent.
 *
 * @returns the revision the checkpoint will write.
 * @throws TrellisError `StaleState`, `SessionNotFound` or `InvalidCheckpoint`.
 */
export function nextRevision(
  checkpoint: Pick<SessionCheckpoint, 'sessionId' | 'expectedRevision' | 'agent'>,
  head: StoredHead | undefined,
): number {
  const { sessionId, expectedRevision, agent } = checkpoint;
  if (!Number.isSafeInteger(expectedRevision) || expectedRevision < 0) {
    throw new TrellisError(
      'InvalidCheckpoint',
      `Checkpoint of session "${sessionId}" has expectedRevision ${String(expectedRevision)}`,
      {
        hint: 'Pass 0 for a new session, otherwise the revision the session was loaded at',
        details: { sessionId, expectedRevision },
      },
    );
  }
  if (!head) {
    if (expectedRevision === 0) return 1;
    throw new TrellisError(
      'SessionNotFound',
      `Session "${sessionId}" is not in the store, but the checkpoint expects revision ${expectedRevision}`,
      {
        hint: 'It was deleted meanwhile; start a new session',
        details: { sessionId, expectedRevision },
      },
    );
  }
  if (head.revision !== expectedRevision) {
    throw new TrellisError(
      'StaleState',
      `Session "${sessionId}" is at revision ${head.revision}, but the checkpoint was built on revision ${expectedRevision}`,
      {
        hint: 'Another turn wrote it first: reload the session and retry',
        details: { sessionId, expectedRevision, storedRevision: head.revision },
      },
    );
  }
  if (head.agent !== agent) {
    // A session belongs to the agent that created it; writing it as another is a bug, not a race.
    throw new TrellisError(
      'InvalidCheckpoint',
      `Session "${sessionId}" belongs to agent "${head.agent}", not "${agent}"`,
      {
        hint: 'Open the session through the agent that created it',
        details: { sessionId, agent, storedAgent: head.agent },
      },
    );
  }
  return head.revision + 1;
}
