import type { Observable } from 'rxjs';
import type { ChatMessage, PendingApproval, SendOptions, Session, TrellisEvent, TurnResult } from '../../index.js';
import type { TrellisRequestContext } from './request-context.js';
import type { HostContext } from './trellis-module-options.js';
import type { HostedResumeOptions, HostedSendOptions, TurnDispatcher } from './turn-dispatcher.js';
import type { TurnTracker } from './turn-tracker.js';

/** What every hosted session of one `TrellisModule` shares: the request context, the drain, where turns run. */
export interface HostedTurns {
  readonly requestContext: TrellisRequestContext;
  readonly tracker: TurnTracker;
  readonly dispatcher: TurnDispatcher;
}

/**
 * A session as the Nest host hands it out. `send` and `resume` carry the current request's
 * host context (explicit `context` keys win over it), are tracked so shutdown can drain
 * them, and run where the module says: in this process, or on the worker queue.
 */
export class HostedSession {
  constructor(
    private readonly session: Session,
    private readonly agent: string,
    private readonly sessionContext: HostContext | undefined,
    private readonly turns: HostedTurns,
  ) {}

  get id(): string {
    return this.session.id;
  }

  /**
   * The conversation so far, as this process last read it: after a turn, or after
   * `pending()` (which reloads it when the store moved on, e.g. a worker ran a turn).
   */
  get transcript(): readonly ChatMessage[] {
    return this.session.transcript;
  }

  /** This session's turn events (model text deltas, rounds, tool calls), wherever its turns run. */
  get events$(): Observable<TrellisEvent> {
    return this.turns.dispatcher.events$(this.target());
  }

  /**
   * Calls `listener` with each turn event; resolves once every event of a turn started
   * afterwards will reach it (on the queue, once Redis confirmed the subscription).
   * Call the returned function to stop.
   */
  watch(listener: (event: TrellisEvent) => void): Promise<() => void> {
    return this.turns.dispatcher.watch(this.target(), listener);
  }

  /** The calls waiting for a decision, read from the store when needed. */
  pending(): Promise<readonly PendingApproval[]> {
    return this.session.pending();
  }

  /** Runs one turn with the request's host context as turn context. */
  send(message: string, options: HostedSendOptions = {}): Promise<TurnResult> {
    const context = this.context(options.context);
    return this.turns.tracker.track(options.signal, (signal) => this.turns.dispatcher.send(this.target(), message, { ...options, context, signal }));
  }

  /** Continues a suspended turn; the decider's host context is the turn context of what runs now. */
  resume(options: HostedResumeOptions): Promise<TurnResult> {
    const context = this.context(options.context);
    return this.turns.tracker.track(options.signal, (signal) => this.turns.dispatcher.resume(this.target(), { ...options, context, signal }));
  }

  /** Runs `session.end` hooks in this process; the store keeps the session. */
  end(): Promise<void> {
    return this.session.end();
  }

  private target() {
    return { agent: this.agent, session: this.session, context: this.sessionContext };
  }

  private context(explicit: SendOptions['context']): SendOptions['context'] {
    const current = this.turns.requestContext.current();
    return current || explicit ? { ...current, ...explicit } : undefined;
  }
}
