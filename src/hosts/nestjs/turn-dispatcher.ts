import type { Observable } from 'rxjs';
import type { ResumeOptions, SendOptions, Session, SessionAccess, TrellisEvent, TurnResult } from '../../../index.js';
import type { HostContext } from './trellis-module-options.js';

/** Options of a hosted `send`: the kernel's, plus the turn's key on the worker queue. */
export interface HostedSendOptions extends SendOptions {
  /**
   * With `queue`: the caller's id for this turn (a message id, an `Idempotency-Key`). The
   * same key sent twice within the queue's `retainMs` runs the turn once and gives both
   * callers its result. Default: a new random key. Ignored when turns run in process.
   */
  readonly key?: string;
  /**
   * With `queue`: what this send does when its session has a turn running or queued
   * (`enqueue`, `reject`, `interrupt`, `rollback`; see docs/scaling.md). Default the queue's.
   * In process, a second send waits for the first (or gets `SessionBusy` from another writer).
   */
  readonly doubleTexting?: 'enqueue' | 'reject' | 'interrupt' | 'rollback';
  /**
   * With `queue`: when `signal` aborts, the turn is stopped on its worker too, not only the
   * waiting for it (`TurnQueue.cancel`, rolled back as a caller's signal rolls back a turn in
   * process), as long as it is still this send's turn: running, or queued behind others (it is
   * stopped when it comes next, so it never runs). The sessions API sets it, so a client that
   * goes away stops its turn. Default false: the signal stops the waiting, and the turn runs to
   * its end on the worker. In process the signal always stops the turn.
   */
  readonly stopTurnOnAbort?: boolean;
}

/** Options of a hosted `cancel` (stopping a running turn). */
export interface HostedStopOptions {
  /** Keep the steps the turn completed (default true); false rolls the turn back. */
  readonly keepSteps?: boolean;
}

/** Options of a hosted `resume`, with the turn's key on the worker queue (as in `send`). */
export interface HostedResumeOptions extends ResumeOptions {
  readonly key?: string;
}

/** Options of a hosted `cancelPending`. */
export interface HostedCancelOptions {
  /**
   * In process: wait up to this many milliseconds for another writer's lease on the session
   * (a turn running elsewhere), as the kernel's `cancelPending` does, instead of failing at
   * once with `SessionBusy`. With `queue` the cancel is a job, which waits for the session's
   * turns like every queued turn; this is not used.
   */
  readonly waitForLease?: number;
  /** With `queue`: the caller's id for this cancel, as a turn's key (the same key cancels once). */
  readonly key?: string;
  /** With `queue`, stops the waiting for the worker's answer; the cancel itself (no model, no tool) is not interrupted. */
  readonly signal?: AbortSignal;
  /** The caller and the owner their access was checked against, as `SendOptions.access`. */
  readonly access?: SessionAccess;
}

/** What a hosted `cancelPending` came to. */
export interface CancelPendingOutcome {
  /** Whether a suspended turn was waiting, and is now cancelled. */
  readonly cancelled: boolean;
  /**
   * With `queue`: an earlier attempt of the cancel job cancelled the turn and its worker died
   * before the job was marked done, so this answer is that attempt's (`cancelled` is then
   * true; nothing was cancelled twice). Always false when turns run in process.
   */
  readonly recovered: boolean;
}

/** Where a hosted watch starts. */
export interface HostedWatchOptions {
  /**
   * With `queue`: the id of the last event seen (an event's `id`, an SSE `Last-Event-ID`):
   * the events after it that the session's Redis Stream keeps come first, then live ones,
   * none twice. In process turns keep no stream: only live events come.
   */
  readonly after?: string;
}

/** The session a turn is for, as a dispatcher needs it. */
export interface TurnTarget {
  /** The agent's name: a worker resolves it to the agent of its own app. */
  readonly agent: string;
  /** The kernel session of this process (a local copy when turns run on workers). */
  readonly session: Session;
  /** The session-level host context given at `agent.session(id, { context })`. */
  readonly context: HostContext | undefined;
}

/**
 * Where the turns of hosted sessions run: in this process (the default), or on the worker
 * queue (`queue` option). `HostedSession` sends every turn and event subscription through it.
 */
export interface TurnDispatcher {
  /**
   * `options.signal` stops the waiting (the caller's and shutdown's, combined); `stop`, the
   * caller's own signal when it asked `stopTurnOnAbort`, stops the turn where it runs elsewhere.
   */
  send(target: TurnTarget, message: string, options: HostedSendOptions, stop?: AbortSignal): Promise<TurnResult>;
  resume(target: TurnTarget, options: HostedResumeOptions): Promise<TurnResult>;
  /** Cancels the session's suspended turn where its turns run. */
  cancelPending(target: TurnTarget, options: HostedCancelOptions): Promise<CancelPendingOutcome>;
  /** Stops the session's running turn where it runs; whether there was one. */
  cancel(target: TurnTarget, options: HostedStopOptions): Promise<boolean>;
  /** The session's turn events, wherever its turns run. */
  events$(target: TurnTarget): Observable<TrellisEvent>;
  /** Calls `listener` with each event; resolves once no event of a turn started after it can be missed. */
  watch(target: TurnTarget, listener: (event: TrellisEvent) => void, options?: HostedWatchOptions): Promise<() => void>;
  /**
   * The principal whose turn of the session runs now (or next) where turns run elsewhere:
   * who opens a brand-new session before its first turn is in the store. Undefined in
   * process (a running turn's owner is in memory there) and when no turn waits.
   */
  currentPrincipal(target: TurnTarget): Promise<string | undefined>;
}

/** Turns run in this process, by the kernel session itself. */
export const inProcessTurns: TurnDispatcher = {
  // The signal is the turn's here: it stops the turn, whether the caller's or shutdown's.
  send: ({ session }, message, { key: _key, doubleTexting: _policy, stopTurnOnAbort: _stop, ...options }) =>
    session.send(message, options),
  resume: ({ session }, { key: _key, ...options }) => session.resume(options),
  cancelPending: async ({ session }, { waitForLease, access }) => ({
    cancelled: await session.cancelPending({ waitForLease, access }),
    recovered: false,
  }),
  cancel: async ({ session }, { keepSteps }) => session.cancel({ keepSteps }),
  events$: ({ session }) => session.events$,
  watch: async ({ session }, listener) => {
    const subscription = session.events$.subscribe(listener);
    return () => subscription.unsubscribe();
  },
  currentPrincipal: async () => undefined,
};
