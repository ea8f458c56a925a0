import { Job, Queue } from 'bullmq';
import { Observable } from 'rxjs';
import { TrellisError, type TrellisErrorCode, type TrellisEvent } from '../../index.js';
import type { EraseRequest } from '../../governance.js';
import { ChannelSubscriber } from './channel-subscriber.js';
import { decodeEvent } from './event-codec.js';
import { QueueNames, settlesWithin, whenReachable, type QueueConnectionOptions } from './queue-connection.js';
import type { CancelJobResult, JobResult, PublishedOutcome, TurnJobResult } from './turn-job-result.js';
import { DOUBLE_TEXT_POLICIES, SessionOrder, type DoubleTextPolicy } from './session-order.js';
import { assertTurnRequest, jobIdOf, type CancelRequest, type ResumeRequest, type SendRequest, type TurnJobData } from './turn-request.js';
import { eraseQueuedTurns, type QueueErasure } from './queue-erasure.js';

/** Options of {@link TurnQueue}. */
export interface TurnQueueOptions extends QueueConnectionOptions {
  /**
   * How long a finished job is kept, and so how long an enqueue of the same turn is
   * recognised as a duplicate. Default 24 h.
   */
  readonly retainMs?: number;
  /** How often a waiting result is also read from the job, should a pub/sub message be lost. Default 2 s. */
  readonly pollMs?: number;
  /** Attempts per job for failures a retry may fix (a store outage). Default 5. */
  readonly attempts?: number;
  /**
   * What a send does when its session has a turn running or queued (see
   * {@link DoubleTextPolicy}): one policy for every agent, or one per agent name (agents not
   * named get `enqueue`). A send's own `doubleTexting` wins. Default `enqueue`: turns run
   * strictly in the order their sends were accepted, whichever instance accepted them.
   */
  readonly doubleTexting?: DoubleTextPolicy | Readonly<Record<string, DoubleTextPolicy>>;
}

/** What {@link TurnQueue.cancel} did. */
export interface CancelledTurn {
  /** The job whose turn was told to stop (running, or next to run); undefined when the session had none. */
  readonly jobId: string | undefined;
}

/** A turn on the queue. */
export interface QueuedTurn<R extends JobResult = TurnJobResult> {
  readonly jobId: string;
  /** The turn was already queued (or done) under this id; this enqueue added nothing. */
  readonly duplicate: boolean;
  /** Settles when a worker finished the turn: the result, or a TrellisError. */
  readonly result: Promise<R>;
}

/**
 * Enqueues turns for {@link TrellisWorker}s, from any instance: a send or a resume of a
 * session (or the cancelling of its suspended turn), whose job id is derived from the
 * session id and the caller's turn key, so a turn enqueued twice runs once. Results and session events come back over Redis pub/sub,
 * whichever worker ran the turn.
 *
 * @example
 * const queue = new TurnQueue({ url: process.env.REDIS_URL! });
 * const { result } = await queue.enqueueSend({ agent: 'support', sessionId, key: messageId, message });
 * const reply = (await result).result.reply;
 */
export class TurnQueue {
  private readonly names: QueueNames;
  private readonly queue: Queue<TurnJobData, JobResult>;
  private readonly subscriber: ChannelSubscriber;
  private readonly retainMs: number;
  private readonly pollMs: number;
  private readonly attempts: number;
  private readonly doubleTexting: TurnQueueOptions['doubleTexting'];
  /** The order of each session's turns; its connection is made at the first enqueue or cancel. */
  private orderRedis: ReturnType<QueueNames['redis']> | undefined;
  private orderOf: SessionOrder | undefined;
  /** The last enqueue found Redis not answering: `close()` then drops the connections at once. */
  private unreachable = false;
  /** How each result still awaited here settles; `close()` settles them all. */
  private readonly awaiting = new Set<(outcome: PublishedOutcome) => void>();

  constructor(options: TurnQueueOptions) {
    this.names = new QueueNames(options);
    this.retainMs = options.retainMs ?? 86_400_000;
    this.pollMs = options.pollMs ?? 2000;
    this.attempts = options.attempts ?? 5;
    this.doubleTexting = options.doubleTexting;
    for (const policy of typeof options.doubleTexting === 'object' && options.doubleTexting !== null ? Object.values(options.doubleTexting) : [options.doubleTexting ?? undefined]) assertPolicy(policy, 'TurnQueue doubleTexting');
    this.queue = new Queue(this.names.queueName, { connection: this.names.bullConnection(), prefix: this.names.prefix });
    this.queue.on('error', () => undefined);
    this.subscriber = new ChannelSubscriber(this.names.redis());
  }

  /** Queues `session.send(message)` and waits for its result. */
  async send(request: SendRequest): Promise<TurnJobResult> {
    return (await this.enqueueSend(request)).result;
  }

  /** Queues `session.resume({ decisions })` and waits for its result. */
  async resume(request: ResumeRequest): Promise<TurnJobResult> {
    return (await this.enqueueResume(request)).result;
  }

  /**
   * Queues `session.cancelPending()`: the session's suspended turn is cancelled on a worker,
   * after any turn of the session queued or running before it, and its waiting calls (and
   * those of sub-agents waiting inside it) never run. Resolves with whether a turn was waiting.
   * The same key within `retainMs` cancels once and gives every caller that answer.
   */
  async cancelPending(request: CancelRequest): Promise<CancelJobResult> {
    assertTurnRequest('cancel', request);
    return (await this.enqueue<CancelJobResult>({ kind: 'cancel', agent: request.agent, sessionId: request.sessionId, key: request.key, context: request.context, ...(request.access && { access: request.access }) })).result;
  }

  /** Queues `session.send(message)`; the result settles later. */
  async enqueueSend(request: SendRequest): Promise<QueuedTurn> {
    assertTurnRequest('send', request);
    assertPolicy(request.doubleTexting, 'send doubleTexting');
    const policy = request.doubleTexting ?? (typeof this.doubleTexting === 'string' ? this.doubleTexting : this.doubleTexting?.[request.agent]) ?? 'enqueue';
    return this.enqueue({ kind: 'send', agent: request.agent, sessionId: request.sessionId, key: request.key, message: request.message, context: request.context, ...(request.access && { access: request.access }) }, policy);
  }

  /**
   * Stops the turn of `sessionId` that runs now (or, if none has started, the one next to run),
   * on whichever worker has it: the job is marked cancelled in Redis and every worker is told
   * over pub/sub; the worker running it aborts the job's signal, and its turn ends `cancelled`
   * (`session.cancel({ keepSteps })`: by default the steps it completed are kept; with
   * `keepSteps: false` it is rolled back). A job not started yet ends `cancelled` without
   * running. The turn's enqueuer gets that result as usual. Turns queued behind it run.
   */
  async cancel(sessionId: string, options: { readonly keepSteps?: boolean } = {}): Promise<CancelledTurn> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) {
      throw new TrellisError('InvalidOptions', 'TurnQueue.cancel() needs the session id of the turn to stop', { hint: "queue.cancel('user-42')" });
    }
    const order = this.order();
    let jobId: string | undefined;
    await whenReachable(this.names, `cancel the turn of session ${sessionId}`, async () => {
      jobId = await order.cancelHead(sessionId, options.keepSteps !== false);
    });
    return { jobId };
  }

  /** Queues `session.resume({ decisions })`; the result settles later. */
  async enqueueResume(request: ResumeRequest): Promise<QueuedTurn> {
    assertTurnRequest('resume', request);
    return this.enqueue({ kind: 'resume', agent: request.agent, sessionId: request.sessionId, key: request.key, decisions: request.decisions, context: request.context, ...(request.access && { access: request.access }), ...(request.approver !== undefined && { approver: request.approver }) });
  }

  /**
   * The events of `sessionId` as the worker running its turns emits them. Subscribing
   * takes a moment: events of a turn enqueued before the subscription settled may be
   * missed (use {@link watch} to know when it has).
   */
  events$(sessionId: string): Observable<TrellisEvent> {
    return new Observable<TrellisEvent>((subscriber) => {
      let stop: (() => void) | undefined;
      let closed = false;
      this.watch(sessionId, (event) => subscriber.next(event)).then(
        (unlisten) => (closed ? unlisten() : (stop = unlisten)),
        (error: unknown) => subscriber.error(error),
      );
      return () => {
        closed = true;
        stop?.();
      };
    });
  }

  /**
   * Calls `listener` with each event of `sessionId`; resolves once Redis confirmed the
   * subscription, so every event of a turn enqueued after that reaches it. Call the
   * returned function to stop.
   */
  watch(sessionId: string, listener: (event: TrellisEvent) => void): Promise<() => void> {
    return this.subscriber.listen(this.names.eventChannel(sessionId), (text) => {
      const event = decodeEvent(text);
      if (event) listener(event);
    });
  }

  /** Removes what Redis keeps of these sessions' turns (see {@link eraseQueuedTurns}); `app.erase(selector, { also: [queue] })` calls it. */
  eraseSessions(request: EraseRequest): Promise<QueueErasure> {
    this.order();
    return eraseQueuedTurns(this.names, this.queue, this.orderRedis!, request);
  }

  /**
   * Disconnects. Results still awaited reject with `Cancelled`: their turns carry on on
   * their workers, and another instance may enqueue the same turn (same key) for its result.
   */
  async close(): Promise<void> {
    const message = 'The turn queue was closed before the result of this turn arrived; the turn still runs on its worker';
    for (const settle of [...this.awaiting]) settle({ ok: false, error: { code: 'Cancelled', message } });
    // A graceful close talks to Redis; when Redis does not answer, drop the connections instead.
    if (this.unreachable) return this.drop();
    const graceful = Promise.all([this.queue.close(), this.subscriber.close(), this.orderRedis?.quit()]);
    const closed = await settlesWithin(this.names.connectTimeoutMs, graceful).catch(() => false);
    if (!closed) this.drop();
  }

  /** Drops the connections without a goodbye (Redis does not answer). */
  private drop(): void {
    this.orderRedis?.disconnect();
    this.subscriber.disconnect();
    void this.queue.close().catch(() => undefined);
  }

  private order(): SessionOrder {
    if (this.orderOf === undefined) {
      this.orderRedis = this.names.redis();
      this.orderOf = new SessionOrder(this.names, this.orderRedis, this.retainMs);
    }
    return this.orderOf;
  }

  private async enqueue<R extends JobResult = TurnJobResult>(data: TurnJobData, policy: DoubleTextPolicy = 'enqueue'): Promise<QueuedTurn<R>> {
    const jobId = jobIdOf(data.kind, data.sessionId, data.key);
    const order = this.order();
    // Nothing is subscribed or added until Redis answers: a failed enqueue leaves no job
    // behind. One script checks for a duplicate, applies the policy and takes the job's
    // place in its session's order (before the job exists, so the order is the acceptance order).
    let placed!: Awaited<ReturnType<SessionOrder['append']>>;
    try {
      await whenReachable(this.names, `queue turn ${jobId}`, async () => {
        await this.queue.waitUntilReady();
        placed = await order.append(data.sessionId, jobId, policy);
      });
      this.unreachable = false;
    } catch (error) {
      this.unreachable = true;
      throw error;
    }
    if (placed.kind === 'rejected') {
      throw new TrellisError('SessionBusy', `Session '${data.sessionId}' has a turn running or queued (job ${placed.head}); this send was refused (doubleTexting: 'reject')`, {
        hint: "Send again once its reply came, or use doubleTexting 'enqueue' (run after it), 'interrupt' or 'rollback' (cancel it)",
        retryable: true,
        details: { sessionId: data.sessionId, running: placed.head },
      });
    }
    const duplicate = placed.kind === 'duplicate';
    let settle!: (outcome: PublishedOutcome) => void;
    const outcome = new Promise<PublishedOutcome>((resolve) => (settle = resolve));
    // Listen before adding, so a fast worker's result cannot slip past.
    const unlisten = await this.subscriber.listen(this.names.resultChannel(jobId), (text) => settle(JSON.parse(text) as PublishedOutcome));
    try {
      await this.queue.add(data.kind, data, {
        jobId,
        attempts: this.attempts,
        backoff: { type: 'exponential', delay: 500 },
        removeOnComplete: { age: Math.ceil(this.retainMs / 1000) },
        removeOnFail: { age: Math.ceil(this.retainMs / 1000) },
      });
    } catch (error) {
      unlisten();
      if (!duplicate) await order.finish(data.sessionId, jobId).catch(() => undefined);
      throw new TrellisError('StoreUnavailable', `Cannot queue turn ${jobId}: ${error instanceof Error ? error.message : String(error)}`, {
        hint: `Check that Redis at ${new URL(this.names.url).host} is running`,
        kind: 'system',
        retryable: true,
        cause: error,
      });
    }
    this.awaiting.add(settle);
    const poll = setInterval(() => void this.readFinished(jobId).then((o) => o && settle(o)), this.pollMs);
    void this.readFinished(jobId).then((o) => o && settle(o));
    const result = outcome.then((o) => {
      // The job id names the kind, so its result is of the kind this caller queued.
      if (o.ok) return o.value as R;
      throw new TrellisError(o.error.code as TrellisErrorCode, o.error.message, { kind: 'system' });
    });
    const cleanup = () => {
      this.awaiting.delete(settle);
      clearInterval(poll);
      unlisten();
    };
    result.then(cleanup, cleanup);
    return { jobId, duplicate, result };
  }

  /** The outcome of a finished job read from the job itself; undefined while it runs. */
  private async readFinished(jobId: string): Promise<PublishedOutcome | undefined> {
    const job = await Job.fromId<TurnJobData, JobResult>(this.queue, jobId).catch(() => undefined);
    if (!job) return undefined;
    const state = await job.getState().catch(() => 'unknown');
    if (state === 'completed' && job.returnvalue) return { ok: true, value: job.returnvalue };
    if (state === 'failed') return { ok: false, error: { code: 'QueuedTurnFailed', message: job.failedReason } };
    return undefined;
  }
}

function assertPolicy(policy: unknown, where: string): asserts policy is DoubleTextPolicy | undefined {
  if (policy === undefined || DOUBLE_TEXT_POLICIES.includes(policy as DoubleTextPolicy)) return;
  throw new TrellisError('InvalidOptions', `${where} must be one of ${DOUBLE_TEXT_POLICIES.map((p) => `'${p}'`).join(', ')}; got ${JSON.stringify(policy)}`, {
    hint: "e.g. doubleTexting: 'interrupt'",
  });
}
