import type { TrellisEvent } from '../events/trellis-event.js';

/** One event of a turn as recorded: when it happened (ms since the epoch, sub-ms precision) and what it was. */
export interface RecordedTurnEvent {
  readonly at: number;
  readonly event: TrellisEvent;
}

/** The recorded events of one turn, oldest first, and how many were dropped for being over the limits. */
export interface StoredTurnEvents {
  readonly events: readonly RecordedTurnEvent[];
  /** Events refused because the turn had reached {@link TURN_EVENT_LIMITS}; 0 when all were kept. */
  readonly dropped: number;
}

/**
 * How much one turn may record. A store keeps the first events up to either limit and
 * counts the rest as dropped, so a runaway turn (thousands of retries, huge arguments)
 * cannot grow the store without bound. A resumed turn appends to the same budget.
 */
export const TURN_EVENT_LIMITS = {
  /** Events per turn. */
  maxEvents: 2000,
  /** Bytes of JSON per turn (the sum of each event's serialized length). */
  maxBytes: 512 * 1024,
} as const;

/**
 * An optional store capability: the events of each turn, kept so a trace can be read
 * after the process that ran the turn is gone (`trellis dev` draws its timelines from it).
 * Events of a session go when the session is deleted.
 */
export interface TurnEventLog {
  /**
   * Appends `events` to turn `turnIndex` of a stored session, within {@link TURN_EVENT_LIMITS}.
   * Fails with `SessionNotFound` when the store has no such session.
   */
  appendTurnEvents(sessionId: string, turnIndex: number, events: readonly RecordedTurnEvent[]): Promise<void>;
  /** The recorded events of a turn; none (and 0 dropped) when nothing was recorded. */
  turnEvents(sessionId: string, turnIndex: number): Promise<StoredTurnEvents>;
}

/** Whether `store` keeps per-turn events (both built-in stores do). */
export function canLogTurnEvents<T extends object>(store: T): store is T & TurnEventLog {
  const log = store as Partial<TurnEventLog>;
  return typeof log.appendTurnEvents === 'function' && typeof log.turnEvents === 'function';
}
