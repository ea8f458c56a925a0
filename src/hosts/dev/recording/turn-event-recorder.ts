import type { Observable, Subscription } from 'rxjs';
import type { TrellisEvent } from '../../../../index.js';
import { TURN_EVENT_LIMITS, type RecordedTurnEvent, type TurnEventLog } from '../../../../stores.js';
import { shrinkEvent } from './shrink-event.js';

/** The events of a turn that is running now. */
export interface LiveTurn {
  readonly turn: number;
  readonly events: readonly RecordedTurnEvent[];
}

/** Events that arrive for a session between turns (e.g. `session.start` hooks) wait for its next turn, up to this many. */
const MAX_EARLY_EVENTS = 200;

/**
 * Writes each turn's events to a {@link TurnEventLog} when the turn finishes (or suspends;
 * a resumed turn appends to the same turn), and keeps the running turns' events for live
 * views (with no log, that is all it does). A host attaches it to `app.events$`; the kernel
 * knows nothing of it. Model text deltas are not kept: the transcript holds the text.
 *
 * @example
 * const recorder = new TurnEventRecorder(app.events$, store).start();
 * // … turns run …
 * await recorder.stop();
 */
export class TurnEventRecorder {
  private readonly open = new Map<string, { turn: number; events: RecordedTurnEvent[] }>();
  private readonly early = new Map<string, RecordedTurnEvent[]>();
  private subscription: Subscription | undefined;
  private writes: Promise<void> = Promise.resolve();

  /** @param onError told about a write the store refused; the turn itself is unaffected. */
  constructor(
    private readonly events$: Observable<TrellisEvent>,
    private readonly log: TurnEventLog | undefined,
    private readonly onError: (error: unknown) => void = () => {},
  ) {}

  /** Subscribes to the event stream; returns `this`. */
  start(): this {
    this.subscription ??= this.events$.subscribe((event) => this.record(event));
    return this;
  }

  /** The running turn of a session and its events so far, or `undefined` between turns. */
  live(sessionId: string): LiveTurn | undefined {
    return this.open.get(sessionId);
  }

  /** Resolves once every finished turn seen so far is written. */
  flushed(): Promise<void> {
    return this.writes;
  }

  /** Unsubscribes and waits for pending writes. Turns still running are not written. */
  async stop(): Promise<void> {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    await this.writes;
  }

  private record(event: TrellisEvent): void {
    if (event.type === 'model.delta') return;
    const sessionId = 'sessionId' in event ? event.sessionId : undefined;
    if (sessionId === undefined) return;
    const entry: RecordedTurnEvent = { at: performance.timeOrigin + performance.now(), event: shrinkEvent(event) };
    if (event.type === 'turn.started') {
      this.open.set(sessionId, { turn: event.turn, events: [...(this.early.get(sessionId) ?? []), entry] });
      this.early.delete(sessionId);
      return;
    }
    const open = this.open.get(sessionId);
    if (!open) {
      const early = this.early.get(sessionId) ?? [];
      if (early.length < MAX_EARLY_EVENTS) early.push(entry);
      this.early.set(sessionId, early);
      return;
    }
    // The store keeps no more than this either; the live view need not grow past it.
    if (open.events.length < TURN_EVENT_LIMITS.maxEvents || event.type === 'turn.finished') open.events.push(entry);
    if (event.type === 'turn.finished') {
      this.open.delete(sessionId);
      this.write(sessionId, open.turn, open.events);
    }
  }

  private write(sessionId: string, turn: number, events: readonly RecordedTurnEvent[]): void {
    const log = this.log;
    if (!log) return;
    this.writes = this.writes.then(() => log.appendTurnEvents(sessionId, turn, events)).catch(this.onError);
  }
}
