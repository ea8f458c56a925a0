import { Job, Queue } from 'bullmq';
import { Observable } from 'rxjs';
import type { Redis } from 'ioredis';
import { TrellisError } from '../../../index.js';
import type { EraseRequest } from '../../../governance.js';
import { ChannelSubscriber } from './channel-subscriber.js';
import type { QueuedEvent } from './queued-event.js';
import { SessionEventReader, type WatchOptions } from './session-event-reader.js';
import { QueueNames, settlesWithin, whenReachable, type QueueConnectionOptions } from './queue-connection.js';
import type { CancelJobResult, JobResult, PublishedOutcome, TurnJobResult } from './turn-job-result.js';
import { DOUBLE_TEXT_POLICIES, SessionOrder, type DoubleTextPolicy } from './session-order.js';
import {
  assertTurnRequest,
  jobIdOf,
  type CancelRequest,
  type ResumeRequest,
  type SendRequest,
  type TurnJobData,
} from './turn-request.js';
import { eraseQueuedTurns, type QueueErasure } from './queue-erasure.js';
import { DEFAULT_WAIT_MS, failedJobError, TurnWait, type JobProbe, type LandedTurnStore } from './turn-wait.js';
import { ParkedTurns, type ParkedTurn } from './parked-turns.js';

/** Options of {@link TurnQueue}. */
export interface TurnQueueOptions extends QueueConnectionOptions {
  /**
   * How long a finished job is kept, and so how long an enqueue of the same turn is
   * answered from the job without running anything. Default 10 minutes. A duplicate that
   * comes later still runs nothing (the worker finds the turn landed under its key in the
   * session) but is a new job. Each kept job costs Redis a few KB: 10,000 sessions at a
   * turn a minute keep ~100,000 jobs (~0.3 GB) at the default, ~14 million (~45 GB) at 24 h.
   */
  readonly retainMs?: number;
  /**
   * How long workers keep writing a session's events to its stream after its last reader
   * here stopped (disconnected): a reader that reconnects within it, with the last id it
   * saw, misses nothing. Default 60 s.
   */
  readonly readerGraceMs?: number;
  /** How often a waiting result is also read from the job, should a pub/sub message be lost. Default 2 s. */
  readonly pollMs?: number;
  /**
   * How long a caller waits for a queued turn's result (`send`, `resume`, `cancelPending`, the
   * `result` of `enqueue…`), unless the call gives its own ({@link WaitOptions}). Then it gets
   * `QueuedTurnTimeout` (the job is still queued or running) or `QueuedTurnLost` (Redis has
   * no such job and the store no such turn). Default 5 minutes.
   */
  readonly waitMs?: number;
  /**
   * The session store the workers write (the same `PostgresStore`): when Redis lost a job (a
   * restart without persistence) or does not answer, a waiting caller reads the turn from it,
   * known by its job id, and returns it (`recovered: true`) instead of waiting for a message
   * that will not come. Without it such a wait ends at `waitMs`.
   */
  readonly store?: LandedTurnStore;
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

/** A caller's bound on its wait for one queued turn. */
export interface WaitOptions {
  /** How long to wait for the result, in ms; default the queue's `waitMs` (5 minutes). */
  readonly waitMs?: number;
}

/** What {@link TurnQueue.cancel} did. */
export interface CancelledTurn {
  /** The job whose turn was told to stop (running, or next to run); undefined when the session had none. */
  readonly jobId: string | undefined;
}

/** What {@link TurnQueue.currentTurn} found. */
export interface CurrentTurn {
  readonly jobId: string;
  /** `access.principal` of the job's request; undefined when it was enqueued without access. */
  readonly principal: string | undefined;
}

/** A turn on the queue. */
export interface QueuedTurn<R extends JobResult = TurnJobResult> {
  readonly jobId: string;
  /** The turn was already queued (or done) under this id; this enqueue added nothing. */
  readonly duplicate: boolean;
  /**
   * Settles when a worker finished the turn: the result, or a TrellisError. Within the wait's
   * bound (`waitMs`): a turn that landed although Redis lost its job comes from the store.
   */
  readonly result: Promise<R>;
}

/**
 * Enqueues turns for {@link TrellisWorker}s, from any instance: a send or a resume of a
 * session (or the cancelling of its suspended turn), whose job id is derived from the
 * session id and the caller's turn key, so a turn enqueued twice runs once. Results and session events come back over Redis pub/sub,
 * whichever worker ran the turn.
 *
 * @example
 * // The workers' store: a turn whose job Redis lost is found there (see `waitMs`).
 * const queue = new TurnQueue({ url: process.env.REDIS_URL!, store });
 * const { result } = await queue.enqueueSend({ agent: 'support', sessionId, key: messageId, message });
 * const reply = (await result).result.reply;
 */
export class TurnQueue {
  private readonly names: QueueNames;
  private readonly queue: Queue<TurnJobData, JobResult>;
  private readonly subscriber: ChannelSubscriber;
  private readonly reader: SessionEventReader;
  /**
   * Commands of the session order scripts and of event readers (registration, replay): one
   * connection, made at the first enqueue, cancel or watch.
   */
  private commandRedis: Redis | undefined;
  private readonly retainMs: number;
  private readonly pollMs: number;
  private readonly waitMs: number;
  private readonly store: LandedTurnStore | undefined;
  private readonly attempts: number;
  private readonly doubleTexting: TurnQueueOptions['doubleTexting'];
  /** The order of each session's turns. */
  private orderOf: SessionOrder | undefined;
  /** The turns parked as poison. */
  private parkedOf: ParkedTurns | undefined;
  /** The last enqueue found Redis not answering: `close()` then drops the connections at once. */
  private unreachable = false;
  /** How each result still awaited here settles; `close()` settles them all. */
  private readonly awaiting = new Set<Pick<TurnWait<JobResult>, 'abandon'>>();

  constructor(options: TurnQueueOptions) {
    this.names = new QueueNames(options);
    this.retainMs = options.retainMs ?? 600_000;
    this.pollMs = options.pollMs ?? 2000;
    this.waitMs = assertWaitMs(options.waitMs, 'TurnQueue waitMs') ?? DEFAULT_WAIT_MS;
    this.store = options.store;
    this.attempts = options.attempts ?? 5;
    this.doubleTexting = options.doubleTexting;
    for (const policy of typeof options.doubleTexting === 'object' && options.doubleTexting !== null
      ? Object.values(options.doubleTexting)
      : [options.doubleTexting ?? undefined])
      assertPolicy(policy, 'TurnQueue doubleTexting');
    this.queue = new Queue(this.names.queueName, {
      connection: this.names.bullConnection(),
      prefix: this.names.prefix,
    });
    this.queue.on('error', () => undefined);
    this.subscriber = new ChannelSubscriber(this.names.redis());
    const graceMs = options.readerGraceMs ?? 60_000;
    if (!Number.isSafeInteger(graceMs) || graceMs < 1) {
      throw new TrellisError(
        'InvalidOptions',
        `The turn queue's readerGraceMs must be a whole number of milliseconds, at least 1; got ${String(options.readerGraceMs)}`,
      );
    }
    this.reader = new SessionEventReader(this.names, this.subscriber, () => this.commands(), graceMs);
  }

  /** Queues `session.send(message)` and waits for its result. */
  async send(request: SendRequest, options?: WaitOptions): Promise<TurnJobResult> {
    return (await this.enqueueSend(request, options)).result;
  }

  /** Queues `session.resume({ decisions })` and waits for its result. */
  async resume(request: ResumeRequest, options?: WaitOptions): Promise<TurnJobResult> {
    return (await this.enqueueResume(request, options)).result;
  }

  /**
   * Queues `session.cancelPending()`: the session's suspended turn is cancelled on a worker,
   * after any turn of the session queued or running before it, and its waiting calls (and
   * those of sub-agents waiting inside it) never run. Resolves with whether a turn was waiting.
   * The same key within `retainMs` cancels once and gives every caller that answer.
   */
  async cancelPending(request: CancelRequest, options?: WaitOptions): Promise<CancelJobResult> {
    assertTurnRequest('cancel', request);
    return (
      await this.enqueue<CancelJobResult>(
        {
          kind: 'cancel',
          agent: request.agent,
          sessionId: request.sessionId,
          key: request.key,
          context: request.context,
          ...(request.access && { access: request.access }),
        },
        'enqueue',
        options,
      )
    ).result;
  }

  /** Queues `session.send(message)`; the result settles later. */
  async enqueueSend(request: SendRequest, options?: WaitOptions): Promise<QueuedTurn> {
    assertTurnRequest('send', request);
    assertPolicy(request.doubleTexting, 'send doubleTexting');
    const policy =
      request.doubleTexting ??
      (typeof this.doubleTexting === 'string' ? this.doubleTexting : this.doubleTexting?.[request.agent]) ??
      'enqueue';
    return this.enqueue(
      {
        kind: 'send',
        agent: request.agent,
        sessionId: request.sessionId,
        key: request.key,
        message: request.message,
        context: request.context,
        ...(request.access && { access: request.access }),
      },
      policy,
      options,
    );
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
      throw new TrellisError('InvalidOptions', 'TurnQueue.cancel() needs the session id of the turn to stop', {
        hint: "queue.cancel('user-42')",
      });
    }
    const order = this.order();
    let jobId: string | undefined;
    await whenReachable(this.names, `cancel the turn of session ${sessionId}`, async () => {
      jobId = await order.cancelHead(sessionId, options.keepSteps !== false);
    });
    return { jobId };
  }

  /**
   * The turn of `sessionId` that runs now (or, if none has started, runs next), and the
   * principal its enqueuer checked access for (`SendRequest.access`): who is opening a
   * brand-new session while its first turn has not landed in the store yet. Undefined when
   * the session has no turn queued or running.
   */
  async currentTurn(sessionId: string): Promise<CurrentTurn | undefined> {
    if (typeof sessionId !== 'string' || sessionId.length === 0) {
      throw new TrellisError('InvalidOptions', 'TurnQueue.currentTurn() needs a session id', {
        hint: "queue.currentTurn('user-42')",
      });
    }
    const order = this.order();
    let head: Awaited<ReturnType<SessionOrder['head']>>;
    await whenReachable(this.names, `read the turn of session ${sessionId}`, async () => {
      head = await order.head(sessionId);
    });
    if (head === undefined) return undefined;
    return { jobId: head.jobId, principal: principalOf(head.data) };
  }

  /** Queues `session.resume({ decisions })`; the result settles later. */
  async enqueueResume(request: ResumeRequest, options?: WaitOptions): Promise<QueuedTurn> {
    assertTurnRequest('resume', request);
    return this.enqueue(
      {
        kind: 'resume',
        agent: request.agent,
        sessionId: request.sessionId,
        key: request.key,
        decisions: request.decisions,
        context: request.context,
        ...(request.access && { access: request.access }),
        ...(request.approver !== undefined && { approver: request.approver }),
      },
      'enqueue',
      options,
    );
  }

  /**
   * The events of `sessionId` as the worker running its turns emits them, each with its run
   * (job id), its number in the run and its stream id. With `after` (the id of the last event
   * seen), the events after it that the session's stream still keeps come first, then live
   * ones, none twice. While subscribed (and for `readerGraceMs` after), workers write the
   * session's events to its stream; subscribing takes a moment (use {@link watch} to know
   * when it has).
   */
  events$(sessionId: string, options: WatchOptions = {}): Observable<QueuedEvent> {
    return new Observable<QueuedEvent>((subscriber) => {
      let stop: (() => void) | undefined;
      let closed = false;
      this.watch(sessionId, (event) => subscriber.next(event), options).then(
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
   * Calls `listener` with each event of `sessionId` (after `options.after`, as
   * {@link events$}); resolves once Redis confirmed the subscription and the reader is
   * registered, so every event of a turn enqueued after that reaches it, and once what was
   * missed since `after` was delivered. Call the returned function to stop.
   */
  watch(sessionId: string, listener: (event: QueuedEvent) => void, options: WatchOptions = {}): Promise<() => void> {
    return this.reader.watch(sessionId, listener, options);
  }

  /** Removes what Redis keeps of these sessions' turns (see {@link eraseQueuedTurns}); `app.erase(selector, { also: [queue] })` calls it. */
  eraseSessions(request: EraseRequest): Promise<QueueErasure> {
    return eraseQueuedTurns(this.names, this.queue, this.commands(), request);
  }

  /**
   * The turns parked as poison, oldest first: each was cut off `maxCrashes` times by a worker
   * that died or stalled running it (`TrellisWorkerOptions.maxCrashes`), so its job failed with
   * `PoisonTurn` instead of running again. They wait for an operator: {@link retryParked} or
   * {@link dropParked}. CLI: `trellis queue parked`.
   */
  async parkedTurns(): Promise<ParkedTurn[]> {
    let turns: ParkedTurn[] = [];
    await whenReachable(this.names, 'list parked turns', async () => {
      turns = await this.parked().list();
    });
    return turns;
  }

  /**
   * Runs a parked turn's request again, once its cause is fixed, as a new job: its key is the
   * parked one's with `.retry-<ms parked>` added, so two operators retrying the same parked turn
   * queue it once. The parked turn itself was ended `cancelled` in its session (its steps
   * discarded), so a parked send's message runs as a new turn, and a parked resume applies its
   * decisions again if its calls still wait (else its job fails `InvalidDecision`). The entry is
   * removed once the new job is queued; the result settles as an enqueue's. CLI:
   * `trellis queue retry <job id>`.
   *
   * @throws TrellisError `InvalidOptions` when no turn is parked under `jobId`.
   */
  async retryParked(jobId: string): Promise<QueuedTurn<TurnJobResult | CancelJobResult>> {
    const entry = await this.parkedEntry(jobId);
    const { runs: _runs, startRevision: _startRevision, ...data } = entry.data;
    const queued = await this.enqueue<JobResult>({ ...data, key: `${data.key}.retry-${Date.parse(entry.parkedAt)}` });
    await this.parked().remove(jobId);
    return queued;
  }

  /** Forgets a parked turn without running it (its session keeps what its journal holds); whether one was parked. */
  async dropParked(jobId: string): Promise<boolean> {
    await this.parkedEntry(jobId);
    return this.parked().remove(jobId);
  }

  private async parkedEntry(jobId: string): Promise<NonNullable<Awaited<ReturnType<ParkedTurns['get']>>>> {
    let entry: Awaited<ReturnType<ParkedTurns['get']>>;
    await whenReachable(this.names, `read parked turn ${jobId}`, async () => {
      entry = typeof jobId === 'string' ? await this.parked().get(jobId) : undefined;
    });
    if (entry === undefined) {
      throw new TrellisError('InvalidOptions', `No turn is parked under job id ${JSON.stringify(jobId)}`, {
        hint: 'List the parked turns with `trellis queue parked` (TurnQueue.parkedTurns()) and pass one of their job ids',
      });
    }
    return entry;
  }

  private parked(): ParkedTurns {
    return (this.parkedOf ??= new ParkedTurns(this.names, this.commands()));
  }

  /**
   * Disconnects. Results still awaited reject with `Cancelled`: their turns carry on on
   * their workers, and another instance may enqueue the same turn (same key) for its result.
   */
  async close(): Promise<void> {
    const message =
      'The turn queue was closed before the result of this turn arrived; the turn still runs on its worker';
    for (const wait of [...this.awaiting]) wait.abandon(new TrellisError('Cancelled', message, { kind: 'system' }));
    // A graceful close talks to Redis; when Redis does not answer, drop the connections instead.
    if (this.unreachable) return this.drop();
    this.reader.close();
    const graceful = Promise.all([this.queue.close(), this.subscriber.close(), this.commandRedis?.quit()]);
    const closed = await settlesWithin(this.names.connectTimeoutMs, graceful).catch(() => false);
    if (!closed) this.drop();
  }

  /** Drops the connections without a goodbye (Redis does not answer). */
  private drop(): void {
    this.reader.close();
    this.commandRedis?.disconnect();
    this.subscriber.disconnect();
    void this.queue.close().catch(() => undefined);
  }

  private order(): SessionOrder {
    return (this.orderOf ??= new SessionOrder(this.names, this.commands()));
  }

  /** The connection for order scripts and event readers' commands, made when first needed. */
  private commands(): Redis {
    return (this.commandRedis ??= this.names.redis());
  }

  private async enqueue<R extends JobResult = TurnJobResult>(
    data: TurnJobData,
    policy: DoubleTextPolicy = 'enqueue',
    options: WaitOptions = {},
  ): Promise<QueuedTurn<R>> {
    const waitMs = assertWaitMs(options?.waitMs, 'waitMs') ?? this.waitMs;
    const jobId = jobIdOf(data.kind, data.sessionId, data.key);
    const order = this.order();
    // What the result channel says before the wait exists is kept for it.
    const early: PublishedOutcome[] = [];
    let hear: (outcome: PublishedOutcome) => void = (outcome) => void early.push(outcome);
    // Listen for the result before the job is added, so a fast worker's result cannot slip
    // past; in the same round trip as the order script, which checks for a duplicate,
    // applies the policy and takes the job's place in its session's order (before the job
    // exists, so the order is the acceptance order). Nothing is added until Redis answers:
    // a failed enqueue leaves no job behind.
    const listening = this.subscriber.listen(this.names.resultChannel(jobId), (text) =>
      hear(JSON.parse(text) as PublishedOutcome),
    );
    let placed!: Awaited<ReturnType<SessionOrder['append']>>;
    let unlisten!: () => void;
    try {
      await whenReachable(this.names, `queue turn ${jobId}`, async () => {
        await this.queue.waitUntilReady();
        [placed, unlisten] = await Promise.all([order.append(data.sessionId, jobId, policy), listening]);
      });
      this.unreachable = false;
    } catch (error) {
      void listening.then(
        (stop) => stop(),
        () => undefined,
      );
      this.unreachable = true;
      throw error;
    }
    if (placed.kind === 'rejected') {
      unlisten();
      throw new TrellisError(
        'SessionBusy',
        `Session '${data.sessionId}' has a turn running or queued (job ${placed.head}); this send was refused (doubleTexting: 'reject')`,
        {
          hint: "Send again once its reply came, or use doubleTexting 'enqueue' (run after it), 'interrupt' or 'rollback' (cancel it)",
          retryable: true,
          details: { sessionId: data.sessionId, running: placed.head },
        },
      );
    }
    const duplicate = placed.kind === 'duplicate';
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
      throw new TrellisError(
        'StoreUnavailable',
        `Cannot queue turn ${jobId}: ${error instanceof Error ? error.message : String(error)}`,
        {
          hint: `Check that Redis at ${new URL(this.names.url).host} is running`,
          kind: 'system',
          retryable: true,
          cause: error,
        },
      );
    }
    // The wait is bounded; when Redis lost the job or does not answer, it reads the store.
    const wait = new TurnWait<R>({
      jobId,
      data,
      waitMs,
      pollMs: this.pollMs,
      store: this.store,
      probe: () => this.probe(jobId),
    });
    this.awaiting.add(wait);
    hear = (outcome) => wait.heard(outcome);
    for (const outcome of early) wait.heard(outcome);
    // A job added now finishes after the subscription was confirmed; one queued before may be done already.
    if (duplicate) wait.readNow();
    const cleanup = () => {
      this.awaiting.delete(wait);
      unlisten();
    };
    wait.result.then(cleanup, cleanup);
    return { jobId, duplicate, result: wait.result };
  }

  /** The job as Redis has it now: finished (with its outcome), still to finish, or missing. */
  private async probe(jobId: string): Promise<JobProbe> {
    const job = await Job.fromId<TurnJobData, JobResult>(this.queue, jobId);
    if (!job) return { kind: 'missing' };
    const state = await job.getState();
    if (state === 'completed' && job.returnvalue)
      return { kind: 'finished', outcome: { ok: true, value: job.returnvalue } };
    if (state === 'failed')
      return { kind: 'finished', outcome: { ok: false, error: failedJobError(job.failedReason) } };
    return { kind: 'pending' };
  }
}

/** A wait bound as given: a whole number of ms from 1 to 24 h, or undefined. */
function assertWaitMs(waitMs: unknown, where: string): number | undefined {
  if (
    waitMs === undefined ||
    (Number.isSafeInteger(waitMs) && (waitMs as number) >= 1 && (waitMs as number) <= 86_400_000)
  )
    return waitMs as number | undefined;
  throw new TrellisError(
    'InvalidOptions',
    `${where} must be a whole number of milliseconds from 1 to 86,400,000; got ${String(waitMs)}`,
    { hint: 'e.g. waitMs: 120000 (2 minutes), or leave it out for 5 minutes' },
  );
}

function assertPolicy(policy: unknown, where: string): asserts policy is DoubleTextPolicy | undefined {
  if (policy === undefined || DOUBLE_TEXT_POLICIES.includes(policy as DoubleTextPolicy)) return;
  throw new TrellisError(
    'InvalidOptions',
    `${where} must be one of ${DOUBLE_TEXT_POLICIES.map((p) => `'${p}'`).join(', ')}; got ${JSON.stringify(policy)}`,
    {
      hint: "e.g. doubleTexting: 'interrupt'",
    },
  );
}

/** The principal in a job's data (`TurnJobData.access`), if any. */
function principalOf(data: string | undefined): string | undefined {
  if (data === undefined) return undefined;
  try {
    const principal = (JSON.parse(data) as Partial<TurnJobData>).access?.principal;
    return typeof principal === 'string' && principal.length > 0 ? principal : undefined;
  } catch {
    return undefined;
  }
}
