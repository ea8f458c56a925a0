import type { Observable } from 'rxjs';
import {
  TrellisError,
  type ChatMessage,
  type PendingApproval,
  type SendOptions,
  type Session,
  type TrellisEvent,
  type TurnResult,
} from '../../../index.js';
import { waitForLeaseProblem } from '../../../host.js';
import type { TrellisRequestContext } from './request-context.js';
import type { HostContext } from './trellis-module-options.js';
import type {
  CancelPendingOutcome,
  HostedCancelOptions,
  HostedResumeOptions,
  HostedSendOptions,
  HostedStopOptions,
  HostedWatchOptions,
  TurnDispatcher,
} from './turn-dispatcher.js';
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

  /** The principal that opened the session (see `Session.owner`); read `pending()` first for the store's word. */
  get owner(): string | undefined {
    return this.session.owner;
  }

  /** The messages of the turn that waits for decisions (see `Session.pendingMessages`). */
  get pendingMessages(): readonly ChatMessage[] {
    return this.session.pendingMessages;
  }

  /** This session's turn events (model text deltas, rounds, tool calls), wherever its turns run. */
  get events$(): Observable<TrellisEvent> {
    return this.turns.dispatcher.events$(this.target());
  }

  /**
   * Calls `listener` with each turn event; resolves once every event of a turn started
   * afterwards will reach it (on the queue, once Redis confirmed the subscription), and,
   * with `after` on the queue, once the events after that id were replayed.
   * Call the returned function to stop.
   */
  watch(listener: (event: TrellisEvent) => void, options: HostedWatchOptions = {}): Promise<() => void> {
    return this.turns.dispatcher.watch(this.target(), listener, options);
  }

  /**
   * The session's owner and whether it is opened, as a caller that wants to stop or watch its
   * running turn needs them: without waiting behind a turn that runs in this process (whose
   * owner this process already holds, and which counts as opened), else from the store. A
   * brand-new session whose first turn runs on the worker queue is not in the store yet: it
   * counts as opened by the principal that turn was sent for.
   */
  async ownerNow(): Promise<{ readonly owner: string | undefined; readonly opened: boolean }> {
    if (this.session.turnRunning) return { owner: this.session.owner, opened: true };
    const pending = await this.session.pending();
    const opened = this.session.transcript.length > 0 || pending.length > 0;
    if (opened || this.session.owner !== undefined) return { owner: this.session.owner, opened };
    const opener = await this.turns.dispatcher.currentPrincipal(this.target());
    return opener === undefined ? { owner: undefined, opened: false } : { owner: opener, opened: true };
  }

  /** The calls waiting for a decision, read from the store when needed. */
  pending(): Promise<readonly PendingApproval[]> {
    return this.session.pending();
  }

  /**
   * Runs one turn with the request's host context as turn context. `signal` stops it in
   * process; with `queue` it stops the waiting, and the turn too with `stopTurnOnAbort`.
   */
  send(message: string, options: HostedSendOptions = {}): Promise<TurnResult> {
    const context = this.context(options.context);
    // Only the caller's own signal stops a queued turn: shutdown giving up stops the waiting alone.
    const stop = options.stopTurnOnAbort === true ? options.signal : undefined;
    return this.turns.tracker.track(options.signal, (signal) =>
      this.turns.dispatcher.send(this.target(), message, { ...options, context, signal }, stop),
    );
  }

  /** Continues a suspended turn; the decider's host context is the turn context of what runs now. */
  resume(options: HostedResumeOptions): Promise<TurnResult> {
    const context = this.context(options.context);
    // The request's approver unless the caller names one (host code deciding for a system).
    const approver = options.approver ?? this.turns.requestContext.currentApprover();
    return this.turns.tracker.track(options.signal, (signal) =>
      this.turns.dispatcher.resume(this.target(), {
        ...options,
        context,
        signal,
        ...(approver !== undefined && { approver }),
      }),
    );
  }

  /**
   * Cancels the suspended turn without a new message (a new `send` does the same first), where
   * the session's turns run: in this process, or as a job on the worker queue that runs after
   * the session's turns queued before it. The waiting calls never run — each is answered
   * `Cancelled` in the transcript — and the turn ends `cancelled`; sub-agents waiting inside
   * it are cancelled first, deepest first. Tracked like a turn, so shutdown drains it.
   *
   * @returns whether a turn was waiting ({@link cancelPendingOutcome} tells more).
   * @example
   * if (await support.session(id).cancelPending()) notify(id, 'The pending refund was withdrawn');
   */
  async cancelPending(options: HostedCancelOptions = {}): Promise<boolean> {
    return (await this.cancelPendingOutcome(options)).cancelled;
  }

  /**
   * {@link cancelPending}, answering `{ cancelled, recovered }`: with `queue`, `recovered` says
   * that an earlier attempt of the cancel job did the cancel and its worker died before the
   * job was marked done (`cancelled` is then true). In process, `recovered` is always false.
   */
  cancelPendingOutcome(options: HostedCancelOptions = {}): Promise<CancelPendingOutcome> {
    const problem = cancelOptionsProblem(options);
    if (problem) return Promise.reject(problem);
    return this.turns.tracker.track(options.signal, (signal) =>
      this.turns.dispatcher.cancelPending(this.target(), { ...options, signal }),
    );
  }

  /**
   * Stops the session's running turn, where it runs: in this process (`Session.cancel`), or on
   * whichever worker runs it (`TurnQueue.cancel`: a Redis signal into the job's AbortSignal).
   * The turn ends `cancelled`, keeping its completed steps unless `keepSteps: false`.
   *
   * @returns whether a turn was running (on the queue: running, or next to run).
   */
  cancel(options: HostedStopOptions = {}): Promise<boolean> {
    if (
      typeof options !== 'object' ||
      options === null ||
      (options.keepSteps !== undefined && typeof options.keepSteps !== 'boolean')
    ) {
      return Promise.reject(
        new TrellisError('InvalidOptions', `cancel() takes { keepSteps?: boolean }, got ${JSON.stringify(options)}`, {
          hint: 'Call cancel(), or cancel({ keepSteps: false }) to roll the turn back',
        }),
      );
    }
    return this.turns.dispatcher.cancel(this.target(), options);
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

/** What is wrong with `cancelPending` options, as the error to reject with; undefined when nothing is. */
function cancelOptionsProblem(options: HostedCancelOptions): TrellisError | undefined {
  if (typeof options !== 'object' || options === null) {
    return new TrellisError('InvalidOptions', `cancelPending() takes an options object, got ${String(options)}`, {
      hint: 'Call cancelPending(), or cancelPending({ waitForLease: 5000 })',
    });
  }
  return waitForLeaseProblem(options.waitForLease, 'cancelPending()');
}
