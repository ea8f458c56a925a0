import { randomUUID } from 'node:crypto';
import { DelayedError, UnrecoverableError, type Job } from 'bullmq';
import type { Redis } from 'ioredis';
import {
  TrellisError,
  type Agent,
  type PendingApproval,
  type Session,
  type SessionAccess,
  type TurnResult,
} from '../../../index.js';
import { toJsonData } from './event-codec.js';
import type { EventStreamWriter } from './event-stream-writer.js';
import { LeaseKeeper } from './lease-keeper.js';
import type { QueueNames } from './queue-connection.js';
import {
  turnResultOf,
  type CancelJobResult,
  type JobResult,
  type PublishedOutcome,
  type TurnJobResult,
} from './turn-job-result.js';
import type { TurnJobData } from './turn-request.js';
import type { TurnStore } from './turn-store.js';
import type { SessionOrder } from './session-order.js';
import type { ParkedTurns } from './parked-turns.js';

/** Resolves an agent name from a job to an `Agent` of the worker's app. */
export type AgentResolver = (name: string) => Agent | Promise<Agent>;

/** What {@link TurnJobRunner} is given by its worker. */
export interface TurnJobRunnerOptions {
  readonly workerId: string;
  readonly names: QueueNames;
  readonly store: TurnStore;
  readonly agent: AgentResolver;
  readonly publisher: Redis;
  /** Where the session's events go while someone reads them. */
  readonly events: EventStreamWriter;
  readonly leaseTtlMs: number;
  /** How long a job whose session is busy waits before it is tried again. */
  readonly busyDelayMs: number;
  /** The sessions' turn order: a job runs when it heads its session's. */
  readonly order: SessionOrder;
  /** Starts a delayed job now (BullMQ's `promote`); a job that is not delayed is left alone. */
  readonly promote: (jobId: string) => Promise<void>;
  /** Attempts of a turn that a worker's death (or stall) may cut off before the turn is parked. */
  readonly maxCrashes: number;
  /** Where poison turns are parked for an operator. */
  readonly parked: ParkedTurns;
}

/**
 * How long a job waiting for its session's earlier turns sleeps before it looks again; the
 * worker that finishes the turn before it wakes it at once (BullMQ's `promote`), so this is
 * only the fallback for a worker that died.
 */
const ORDER_WAIT_MS = 1000;

/** The reason a worker aborts a job's signal with when its turn is cancelled and rolled back (`TurnQueue.cancel`). */
export const ROLLBACK_REASON = 'trellis:rollback';
/** … when its turn is cancelled keeping its completed steps. */
export const INTERRUPT_REASON = 'trellis:interrupt';

/** Errors a later attempt may not meet. Anything else fails the job at once. */
const RETRY_CODES = new Set(['SessionBusy', 'StaleState', 'StoreUnavailable']);

/** A queued job as BullMQ hands it to the worker. */
type TurnJob = Job<TurnJobData, JobResult>;

/**
 * Runs one queued turn: takes the session's queue lease (a busy session puts the job back
 * as delayed), recognises a turn whose checkpoint already landed in an earlier attempt by
 * the job id it was run under (and does not run it again), runs `send`/`resume`/`cancelPending`
 * under the job id as the turn's key — so an attempt after a worker died goes on with the
 * turn from its step journal — sends the session's events to its stream while someone reads
 * them, publishes the result, and
 * releases the lease.
 */
export class TurnJobRunner {
  constructor(private readonly options: TurnJobRunnerOptions) {}

  async run(job: TurnJob, token: string | undefined, cancel?: AbortSignal): Promise<JobResult> {
    const { store, names, workerId, order } = this.options;
    const data = job.data;
    // Turns of a session run in the order they were accepted: only the head of its order runs.
    const place = await order.placeOf(data.sessionId, job.id!);
    if (place.kind === 'wait') {
      await job.moveToDelayed(Date.now() + ORDER_WAIT_MS, token);
      // The turn ahead may have finished meanwhile, its worker finding this job still active (not yet delayed) to wake.
      if ((await order.placeOf(data.sessionId, job.id!)).kind === 'run') await job.promote().catch(() => undefined);
      throw new DelayedError();
    }
    if (place.cancelled !== undefined || cancel?.aborted) {
      // Cancelled (`TurnQueue.cancel`, or a later send's interrupt / rollback) before it began: it ends without running.
      const value = this.notRun(job);
      await this.finish(job, { ok: true, value });
      return value;
    }
    // One holder per attempt: a stalled job that BullMQ hands back to this same worker must
    // wait for the attempt still running here, not share its lease.
    const lease = new LeaseKeeper(
      store,
      names.leaseKey(data.sessionId),
      `${workerId}/${job.id}/${randomUUID().slice(0, 8)}`,
      this.options.leaseTtlMs,
    );
    const startRevision = data.startRevision;
    // The store's revision is read with the lease (one round trip on PostgreSQL).
    const revision = await lease.acquire(data.sessionId);
    if (revision === undefined) {
      await job.moveToDelayed(Date.now() + this.options.busyDelayMs, token);
      throw new DelayedError();
    }
    try {
      const value = await this.runLeased(job, revision, lease.signal, cancel);
      await this.finish(job, { ok: true, value });
      return value;
    } catch (error) {
      // The kernel's own session lease is held (by a turn outside the queue, or by a worker
      // that died and whose lease has not lapsed yet): wait, without spending an attempt.
      if (TrellisError.is(error, 'SessionBusy') && !lease.signal.aborted) {
        // Nothing ran in this attempt: the next one must see what the attempts before it saw.
        if (job.data.startRevision !== startRevision || job.data.runs !== data.runs)
          await job.updateData({ ...job.data, startRevision, runs: data.runs });
        await job.moveToDelayed(Date.now() + this.options.busyDelayMs, token);
        throw new DelayedError();
      }
      // Fenced: this attempt stalled past its leases and another holder has the session (and, past
      // the job lock, the job). That holder answers for the turn; this one publishes nothing and
      // leaves the session's order alone. Still its job's holder (only the lease was taken), BullMQ retries it.
      if (TrellisError.is(error, 'LeaseLost') || lease.signal.aborted) throw error;
      throw await this.failure(job, error);
    } finally {
      await lease.release();
    }
  }

  /**
   * The job leaves its session's order and its outcome goes to its enqueuer, in one round
   * trip (the outcome after the order, so an enqueuer that sends the next turn on hearing it
   * finds this one gone); the next turn of the session (if one waits, delayed) starts at once.
   * Should the script fail (Redis away), the outcome is still published on its own.
   */
  private async finish(job: TurnJob, outcome: PublishedOutcome): Promise<void> {
    let next: string | undefined;
    try {
      next = await this.options.order.finish(job.data.sessionId, job.id!, {
        channel: this.options.names.resultChannel(job.id!),
        message: JSON.stringify(outcome),
      });
    } catch (error) {
      await this.publish(job.id!, outcome);
      throw error;
    }
    if (next === undefined) return;
    await this.options.promote(next).catch(() => undefined);
  }

  /** What a job cancelled before it began comes to. */
  private notRun(job: TurnJob): JobResult {
    const data = job.data;
    if (data.kind === 'cancel')
      return {
        jobId: job.id!,
        sessionId: data.sessionId,
        kind: 'cancel',
        cancelled: false,
        recovered: false,
        worker: this.options.workerId,
      };
    const result: TurnResult = {
      status: 'cancelled',
      reply: undefined,
      rounds: 0,
      toolCalls: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, byModel: {} },
      error: { code: 'Cancelled', message: 'The turn was cancelled before it began' },
    };
    return this.resultOf(job, data.kind, result, false);
  }

  private async runLeased(
    job: TurnJob,
    revision: number,
    signal: AbortSignal,
    cancel: AbortSignal | undefined,
  ): Promise<JobResult> {
    const data = job.data;
    // An earlier attempt ran part of this turn (and the process died) when the store moved on since.
    const rerun = data.startRevision !== undefined && revision > data.startRevision;
    if (rerun && data.kind !== 'cancel') {
      const landed = await this.landedTurn(data, job.id!, revision);
      if (landed) return this.resultOf(job, data.kind, landed, true);
    }
    // Attempts that began and neither finished nor failed were cut off by a worker that died
    // (or stalled): a turn that crashes every worker is parked, not run again (a poison turn).
    const runs = data.runs ?? 0;
    const crashes = runs - job.attemptsMade;
    if (crashes >= this.options.maxCrashes) return this.park(job, crashes);
    // Recorded before the turn runs: a later attempt compares it with the store's revision.
    await job.updateData({ ...data, startRevision: revision, runs: runs + 1 });
    const agent = await this.options.agent(data.agent);
    const session = agent.session(data.sessionId, { context: data.context });
    const stream = this.options.events.forTurn(data.sessionId, job.id!);
    const events = session.events$.subscribe((event) => stream.emit(event));
    // `TurnQueue.cancel` (or a later send's interrupt / rollback) reaches the job's signal on this worker: the turn stops.
    const onCancel = () => session.cancel({ keepSteps: cancel?.reason !== ROLLBACK_REASON });
    cancel?.addEventListener('abort', onCancel, { once: true });
    try {
      if (data.kind === 'cancel') {
        const done = await this.cancel(job, session, rerun, data.access);
        // The queue lease was lost meanwhile, as for a turn: the next attempt reports it.
        if (signal.aborted) throw signal.reason;
        return done;
      }
      let decisions = data.kind === 'resume' ? data.decisions : [];
      if (data.kind === 'resume' && rerun) {
        // An earlier attempt of this job may have been cut off while an approved call ran: the
        // call journal now asks a human whether to retry or skip that call, so this job's
        // decision for it is spent. The turn is reported suspended on that question.
        const pending = await session.pending();
        decisions = data.decisions.filter(
          (d) => !pending.some((p) => p.callId === d.callId && reopenedBy(p, d.decision)),
        );
        if (decisions.length === 0) {
          const stored = await this.options.store.load(data.sessionId);
          const last = stored?.turns.at(-1);
          if (last) return this.resultOf(job, data.kind, turnResultOf(last, pending), true);
        }
      }
      // Cancelled since it began here (before the turn is running, `session.cancel` would find nothing to stop).
      if (cancel?.aborted) return this.notRun(job);
      // The job id is the turn's key: a later attempt goes on with the turn this one started.
      const key = job.id!;
      // The kernel's session lease lasts as long as the queue lease: a killed worker's turn goes on once both lapsed.
      const leaseTtlMs = this.options.leaseTtlMs;
      const { access } = data;
      const result =
        data.kind === 'send'
          ? await session.send(data.message, { signal, key, leaseTtlMs, access })
          : await session.resume({
              decisions,
              signal,
              key,
              leaseTtlMs,
              access,
              ...(data.approver !== undefined && { approver: data.approver }),
            });
      if (signal.aborted) throw signal.reason;
      // An earlier attempt ran part of this turn (the store moved on since it started): this one went on with it.
      return this.resultOf(job, data.kind, result, rerun);
    } finally {
      cancel?.removeEventListener('abort', onCancel);
      events.unsubscribe();
      stream.close();
    }
  }

  /**
   * Cancels the session's suspended turn. When an earlier attempt of this job cancelled it
   * and died before the job was marked done, the session no longer waits and its last turn
   * is the cancelled one: that attempt's answer is given, as recovered.
   */
  private async cancel(
    job: TurnJob,
    session: Session,
    rerun: boolean,
    access: SessionAccess | undefined,
  ): Promise<CancelJobResult> {
    const cancelled = await session.cancelPending({ leaseTtlMs: this.options.leaseTtlMs, access });
    const recovered =
      !cancelled && rerun && (await this.options.store.load(job.data.sessionId))?.turns.at(-1)?.status === 'cancelled';
    return {
      jobId: job.id!,
      sessionId: job.data.sessionId,
      kind: 'cancel',
      cancelled: cancelled || recovered,
      recovered,
      worker: this.options.workerId,
    };
  }

  /**
   * The result of this job's turn if an earlier attempt checkpointed it: for a send, the turn
   * recorded under this job's id (never one found by its text: two turns may say "yes"); for a
   * resume, a session no longer waiting on the calls decided, with no turn running.
   */
  private async landedTurn(data: TurnJobData, jobId: string, revision: number): Promise<TurnResult | undefined> {
    const stored = await this.options.store.load(data.sessionId);
    if (!stored || stored.revision !== revision) return undefined;
    // A turn still running (its step journal open) has not landed: the attempt goes on with it.
    if (stored.steps !== undefined && stored.steps.length > 0) return undefined;
    const record = data.kind === 'send' ? stored.turns.find((t) => t.key === jobId) : stored.turns.at(-1);
    if (!record) return undefined;
    const agent = await this.options.agent(data.agent);
    const pending = await agent.session(data.sessionId, { context: data.context }).pending();
    if (data.kind === 'resume' && pending.some((p) => data.decisions.some((d) => d.callId === p.callId)))
      return undefined;
    return turnResultOf(record, pending);
  }

  /**
   * Parks a turn its workers could not get through: kept for an operator with its request
   * (`TurnQueue.parkedTurns`, `retryParked`), and ended in its session without another step —
   * the kernel's turn, given a signal aborted from the start, ends `cancelled` and discards its
   * steps — so the session's next turn does not go on with it and crash again. The error fails
   * the job at once; its caller gets it as `PoisonTurn`.
   */
  private async park(job: TurnJob, crashes: number): Promise<never> {
    const { data } = job;
    const error = new TrellisError(
      'PoisonTurn',
      `The ${data.kind} of session '${data.sessionId}' (job ${job.id}) was cut off ${crashes} times: every worker that ran it died or stalled (a tool or a model call that crashes its process?). It is parked as failed and was not run again; the session takes new turns`,
      {
        hint: `An operator lists parked turns with \`trellis queue parked\` and, once the cause is fixed, runs this one again as a new turn with \`trellis queue retry ${job.id}\` (TurnQueue.parkedTurns(), retryParked())`,
        kind: 'system',
        details: { jobId: job.id, sessionId: data.sessionId, crashes },
      },
    );
    await this.options.parked.park({
      jobId: job.id!,
      kind: data.kind,
      agent: data.agent,
      sessionId: data.sessionId,
      crashes,
      reason: error.message,
      parkedAt: new Date().toISOString(),
      data,
    });
    if (data.kind !== 'cancel') {
      const session = (await this.options.agent(data.agent)).session(data.sessionId, { context: data.context });
      // The dead worker's kernel lease may outlive the queue's by a moment.
      const ending = {
        key: job.id!,
        signal: AbortSignal.abort(error),
        leaseTtlMs: this.options.leaseTtlMs,
        waitForLease: this.options.leaseTtlMs,
        access: data.access,
      };
      await (
        data.kind === 'send'
          ? session.send(data.message, ending)
          : session.resume({ ...ending, decisions: data.decisions })
      ).catch(() => undefined);
    }
    throw error;
  }

  private resultOf(job: TurnJob, kind: TurnJobResult['kind'], result: TurnResult, recovered: boolean): TurnJobResult {
    return {
      jobId: job.id!,
      sessionId: job.data.sessionId,
      kind,
      result: toJsonData(result),
      recovered,
      worker: this.options.workerId,
    };
  }

  /** Decides between another attempt (rethrow) and a final failure (published, not retried). */
  private async failure(job: TurnJob, error: unknown): Promise<unknown> {
    const code = TrellisError.is(error) ? error.code : 'TurnFailed';
    const message = error instanceof Error ? error.message : String(error);
    const retryable = TrellisError.is(error) && (error.retryable || RETRY_CODES.has(error.code));
    const attempts = job.opts.attempts ?? 1;
    if (retryable && job.attemptsMade + 1 < attempts) return error;
    await this.finish(job, { ok: false, error: { code, message } }).catch(() => undefined);
    return new UnrecoverableError(`${code}: ${message}`);
  }

  private async publish(jobId: string, outcome: PublishedOutcome): Promise<void> {
    await this.options.publisher
      .publish(this.options.names.resultChannel(jobId), JSON.stringify(outcome))
      .catch(() => undefined);
  }
}

/** Whether the call journal re-opened a pending call so that it no longer takes `decision`. */
function reopenedBy(call: PendingApproval, decision: string): boolean {
  return (
    call.ticket.data?.['interrupted'] === true && !(call.ticket.allowedDecisions ?? []).includes(decision as never)
  );
}
