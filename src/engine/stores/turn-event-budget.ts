import { TrellisError } from '../../errors/trellis-error.js';
import { TURN_EVENT_LIMITS, type RecordedTurnEvent } from './turn-event-log.js';

/** What a turn has used of its {@link TURN_EVENT_LIMITS} so far. */
export interface TurnEventUsage {
  readonly events: number;
  readonly bytes: number;
  readonly dropped: number;
}

/** The outcome of admitting a batch: the events to store (serialized) and the turn's usage after it. */
export interface AdmittedEvents {
  readonly rows: readonly string[];
  readonly usage: TurnEventUsage;
}

/**
 * Decides which of `events` fit in a turn that has used `usage`: events are kept in order
 * until one would pass a limit; that one and every later one are counted as dropped, so the
 * stored trace is always a prefix of what happened, never one with holes.
 */
export function admitTurnEvents(
  sessionId: string,
  turnIndex: number,
  usage: TurnEventUsage,
  events: readonly RecordedTurnEvent[],
): AdmittedEvents {
  if (!Array.isArray(events)) {
    throw new TrellisError(
      'InvalidOptions',
      `Turn events of session "${sessionId}" must be a list, got ${typeof events}`,
      { hint: 'Pass an array of { at, event }' },
    );
  }
  const rows: string[] = [];
  let { events: count, bytes, dropped } = usage;
  for (const event of events) {
    if (dropped > 0) {
      dropped += 1;
      continue;
    }
    const row = serialize(event, sessionId, turnIndex);
    if (count + 1 > TURN_EVENT_LIMITS.maxEvents || bytes + row.length > TURN_EVENT_LIMITS.maxBytes) {
      dropped += 1;
      continue;
    }
    rows.push(row);
    count += 1;
    bytes += row.length;
  }
  return { rows, usage: { events: count, bytes, dropped } };
}

function serialize(event: RecordedTurnEvent, sessionId: string, turnIndex: number): string {
  if (typeof event?.at !== 'number' || typeof event.event?.type !== 'string') {
    throw new TrellisError(
      'InvalidOptions',
      `A turn event of session "${sessionId}" (turn ${turnIndex}) is not { at: number, event: { type, … } }`,
      {
        hint: 'Record events as the TurnEventRecorder does',
      },
    );
  }
  try {
    return JSON.stringify(event);
  } catch (error) {
    throw new TrellisError(
      'InvalidOptions',
      `A turn event of session "${sessionId}" (turn ${turnIndex}) is not JSON-serializable: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'Keep event payloads to plain JSON values',
      },
    );
  }
}

/** The error of appending events to a session the store does not hold. */
export function noSessionForEvents(sessionId: string): TrellisError {
  return new TrellisError('SessionNotFound', `Cannot record turn events: the store has no session "${sessionId}"`, {
    hint: "Record a turn's events after its checkpoint stored the session",
    details: { sessionId },
  });
}
