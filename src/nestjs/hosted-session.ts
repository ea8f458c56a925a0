import type { Observable } from 'rxjs';
import type { ChatMessage, PendingApproval, ResumeOptions, SendOptions, Session, TrellisEvent, TurnResult } from '../../index.js';
import type { TrellisRequestContext } from './request-context.js';
import type { TurnTracker } from './turn-tracker.js';

/**
 * A session as the Nest host hands it out. `send` and `resume` carry the current request's
 * host context (explicit `context` keys win over it) and are tracked so shutdown can drain
 * them; everything else is the kernel session's.
 */
export class HostedSession {
  constructor(
    private readonly session: Session,
    private readonly requestContext: TrellisRequestContext,
    private readonly tracker: TurnTracker,
  ) {}

  get id(): string {
    return this.session.id;
  }

  /** The conversation so far (after a turn or `pending()` loaded it). */
  get transcript(): readonly ChatMessage[] {
    return this.session.transcript;
  }

  /** This session's turn events: model text deltas, rounds, tool calls. */
  get events$(): Observable<TrellisEvent> {
    return this.session.events$;
  }

  /** The calls waiting for a decision, read from the store when needed. */
  pending(): Promise<readonly PendingApproval[]> {
    return this.session.pending();
  }

  /** Runs one turn with the request's host context as turn context. */
  send(message: string, options: SendOptions = {}): Promise<TurnResult> {
    const context = this.context(options.context);
    return this.tracker.track(options.signal, (signal) => this.session.send(message, { ...options, context, signal }));
  }

  /** Continues a suspended turn; the decider's host context is the turn context of what runs now. */
  resume(options: ResumeOptions): Promise<TurnResult> {
    const context = this.context(options.context);
    return this.tracker.track(options.signal, (signal) => this.session.resume({ ...options, context, signal }));
  }

  /** Runs `session.end` hooks; the store keeps the session. */
  end(): Promise<void> {
    return this.session.end();
  }

  private context(explicit: SendOptions['context']): SendOptions['context'] {
    const current = this.requestContext.current();
    return current || explicit ? { ...current, ...explicit } : undefined;
  }
}
