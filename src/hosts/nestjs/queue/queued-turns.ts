import { randomUUID } from 'node:crypto';
import { defer, type Observable } from 'rxjs';
import { TrellisError, type TrellisEvent, type TurnResult } from '../../../../index.js';
import type { TurnQueue } from '../../../../queue.js';
import type {
  CancelPendingOutcome,
  HostedCancelOptions,
  HostedResumeOptions,
  HostedSendOptions,
  HostedStopOptions,
  HostedWatchOptions,
  TurnDispatcher,
  TurnTarget,
} from '../turn-dispatcher.js';
import type { QueueSettings } from './queue-options.js';

/**
 * Sends the turns of hosted sessions to the worker queue: `send` / `resume` (and
 * `cancelPending`) become jobs of `TurnQueue` (`trellis/queue`, loaded only when the `queue`
 * option is set, so an app without it never loads BullMQ) and resolve with the worker's
 * answer; events come back from the worker over Redis.
 *
 * A signal (a client that went away, shutdown giving up) stops the waiting; the turn goes on
 * on its worker and is checkpointed as usual, unless the send asked `stopTurnOnAbort` and its
 * own signal fired: then the worker is told to stop it (see {@link stopWhenNext}).
 *
 * The `TurnQueue` connects to Redis when it is first used, not at bootstrap: Nest runs no
 * shutdown hook when a later module fails to initialise, so connections opened then would
 * be left open, keeping the process alive.
 */
export class QueuedTurns implements TurnDispatcher {
  #entry: typeof import('../../../../queue.js') | undefined;
  #queue: TurnQueue | undefined;
  #closed = false;

  constructor(private readonly settings: QueueSettings) {}

  /** Loads `trellis/queue` (BullMQ, ioredis), so a missing package fails bootstrap; opens no connection. */
  async load(): Promise<void> {
    this.#entry = await import('../../../../queue.js');
  }

  /** Disconnects, if a turn ever connected; later turns are refused. */
  async close(): Promise<void> {
    this.#closed = true;
    const queue = this.#queue;
    this.#queue = undefined;
    await queue?.close();
  }

  async send(target: TurnTarget, message: string, options: HostedSendOptions, stop?: AbortSignal): Promise<TurnResult> {
    const request = {
      agent: target.agent,
      sessionId: target.session.id,
      key: options.key ?? randomUUID(),
      context: this.context(target, options.context),
      message,
      ...(options.doubleTexting !== undefined && { doubleTexting: options.doubleTexting }),
      ...(options.access && { access: options.access }),
    };
    if (stop === undefined) return (await this.run(target, options.signal, (queue) => queue.send(request))).result;
    return (
      await this.run(target, options.signal, async (queue) => {
        const turn = await queue.enqueueSend(request);
        const stopper = stopWhenNext(queue, request.sessionId, turn.jobId, stop);
        try {
          return await turn.result;
        } finally {
          stopper.end();
        }
      })
    ).result;
  }

  async resume(target: TurnTarget, options: HostedResumeOptions): Promise<TurnResult> {
    const request = {
      agent: target.agent,
      sessionId: target.session.id,
      key: options.key ?? randomUUID(),
      context: this.context(target, options.context),
      decisions: options.decisions,
      ...(options.approver !== undefined && { approver: options.approver }),
      ...(options.access && { access: options.access }),
    };
    return (await this.run(target, options.signal, (queue) => queue.resume(request))).result;
  }

  /**
   * A job that cancels the suspended turn on a worker, in the session's turn order. It carries
   * the session-level host context only, as the kernel's `cancelPending` uses no other. The
   * answer keeps the job's `recovered` (an earlier attempt did the cancel, then its worker died).
   */
  async cancelPending(target: TurnTarget, options: HostedCancelOptions): Promise<CancelPendingOutcome> {
    const request = {
      agent: target.agent,
      sessionId: target.session.id,
      key: options.key ?? randomUUID(),
      context: target.context,
      ...(options.access && { access: options.access }),
    };
    const { cancelled, recovered } = await this.run(target, options.signal, (queue) => queue.cancelPending(request));
    return { cancelled, recovered };
  }

  /** `TurnQueue.cancel`: the worker running the session's turn stops it; whether the session had one running or next. */
  async cancel(target: TurnTarget, options: HostedStopOptions): Promise<boolean> {
    return (await this.queue().cancel(target.session.id, { keepSteps: options.keepSteps })).jobId !== undefined;
  }

  events$(target: TurnTarget): Observable<TrellisEvent> {
    return defer(() => this.queue().events$(target.session.id));
  }

  watch(
    target: TurnTarget,
    listener: (event: TrellisEvent) => void,
    options: HostedWatchOptions = {},
  ): Promise<() => void> {
    return this.queue().watch(target.session.id, listener, options);
  }

  async currentPrincipal(target: TurnTarget): Promise<string | undefined> {
    return (await this.queue().currentTurn(target.session.id))?.principal;
  }

  private async run<R>(
    target: TurnTarget,
    signal: AbortSignal | undefined,
    enqueue: (queue: TurnQueue) => Promise<R>,
  ): Promise<R> {
    signal?.throwIfAborted();
    const done = await untilAborted(enqueue(this.queue()), signal);
    // The local copy of the session catches up with the worker's checkpoint, so `transcript`
    // and `pending()` read what the turn did. A store hiccup here does not undo the result.
    await target.session.pending().catch(() => undefined);
    return done;
  }

  /** The worker opens the session with this as its host context: session-level keys under the turn's. */
  private context(
    target: TurnTarget,
    turn: Readonly<Record<string, unknown>> | undefined,
  ): Readonly<Record<string, unknown>> | undefined {
    return target.context || turn ? { ...target.context, ...turn } : undefined;
  }

  private queue(): TurnQueue {
    if (this.#queue) return this.#queue;
    if (this.#entry && !this.#closed) return (this.#queue = new this.#entry.TurnQueue(this.settings.queue));
    throw new TrellisError(
      'NotStarted',
      'The turn queue is not open: the Nest application has not finished bootstrapping, or has shut down',
      {
        hint: 'Send turns after app.init() / NestFactory.create() resolved, and before app.close()',
      },
    );
  }
}

/** How often a stopped send asks whether its turn is the session's running (or next) one yet. */
const STOP_POLL_MS = 100;

/**
 * Once `signal` fires, stops job `jobId` of `sessionId` on its worker (`TurnQueue.cancel`, rolled
 * back) when it is the session's turn that runs now or runs next; a job queued behind others is
 * asked about again every {@link STOP_POLL_MS} until it is (a worker may start it in between: it
 * is then stopped running, and rolled back; a cancel by job id in `TurnQueue` would close that). Ends when the
 * turn's result came (`end()`), or when the session has no turn left (this one finished).
 * `TurnQueue.cancel` stops whichever turn is the session's head, so the check comes first; the
 * one round trip between them is the only window where a turn of the same session queued right
 * behind this one, which became the head as this one finished, could be stopped instead.
 */
function stopWhenNext(queue: TurnQueue, sessionId: string, jobId: string, signal: AbortSignal): { end(): void } {
  let ended = false;
  let timer: NodeJS.Timeout | undefined;
  const attempt = async (): Promise<void> => {
    if (ended) return;
    try {
      const head = await queue.currentTurn(sessionId);
      if (ended || head === undefined) return;
      if (head.jobId === jobId) {
        ended = true;
        await queue.cancel(sessionId, { keepSteps: false });
        return;
      }
    } catch {
      // Redis did not answer: ask again on the next tick, until the turn's result ends this.
    }
    if (!ended) timer = setTimeout(() => void attempt(), STOP_POLL_MS);
  };
  const onAbort = () => void attempt();
  if (signal.aborted) onAbort();
  else signal.addEventListener('abort', onAbort, { once: true });
  return {
    end: () => {
      ended = true;
      clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    },
  };
}

/** `work`, or the signal's reason once it fires first. */
function untilAborted<T>(work: Promise<T>, signal: AbortSignal | undefined): Promise<T> {
  if (!signal) return work;
  return new Promise<T>((resolve, reject) => {
    const abort = () =>
      reject(signal.reason ?? new TrellisError('Cancelled', 'The caller stopped waiting for the queued turn'));
    signal.addEventListener('abort', abort, { once: true });
    work.then(resolve, reject).finally(() => signal.removeEventListener('abort', abort));
  });
}
