import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { TrellisError } from '../../../index.js';
import { QueueNames, whenReachable, type QueueConnectionOptions } from './queue-connection.js';
import { ChannelSubscriber } from './channel-subscriber.js';
import { EventStreamWriter, type EventRetention } from './event-stream-writer.js';
import { redisRequirementProblems } from './redis-requirements.js';
import { ParkedTurns } from './parked-turns.js';
import type { JobResult } from './turn-job-result.js';
import { INTERRUPT_REASON, ROLLBACK_REASON, TurnJobRunner, type AgentResolver } from './turn-job-runner.js';
import { cancelChannel, parseCancelMessage, SessionOrder } from './session-order.js';
import type { TurnJobData } from './turn-request.js';
import type { TurnStore } from './turn-store.js';

/** Options of {@link TrellisWorker}. */
export interface TrellisWorkerOptions extends QueueConnectionOptions {
  /** The store of the worker's app: the same (PostgreSQL) store every instance uses. */
  readonly store: TurnStore;
  /** The agent a job names, from the worker's app (built from the same plugins and config as every instance). */
  readonly agent: AgentResolver;
  /** Jobs run at once by this worker. Default 4. */
  readonly concurrency?: number;
  /**
   * The per-session leases a job holds — the queue's and the kernel's session lease of its
   * turn (`SendOptions.leaseTtlMs`) — renewed every third of it. A job whose worker died runs
   * again once both this and the job lock lapsed: with the defaults (10 s, lock 5 s) its turn
   * goes on within about 10 s (measured: docs/scaling.md). A live worker paused longer than
   * this (GC, an overloaded host) is fenced: its writes are refused and it runs no tool once
   * another worker took the session (docs/durable-steps.md). 1,000 to 86,400,000 ms. Default 10 s.
   */
  readonly leaseTtlMs?: number;
  /**
   * BullMQ's job lock: a worker that stops renewing it (it died) has its job put back after
   * about this long; the job then waits for the leases. Default 5 s.
   */
  readonly lockDurationMs?: number;
  /** How often BullMQ looks for stalled jobs. Default half the lock duration. */
  readonly stalledIntervalMs?: number;
  /**
   * How many times a turn's run may be cut off — its worker died, or stalled past its job lock —
   * before the turn is parked instead of run again: its job fails with `PoisonTurn` (the
   * caller's wait rejects with it), its turn is ended in its session without another step (it
   * ends `cancelled`, its steps discarded) and the session's order and leases are let go, so the
   * session's next turn runs; an operator
   * sees it in `TurnQueue.parkedTurns()` (`trellis queue parked`) and may queue it again
   * (`retryParked`, `trellis queue retry`). 1 to 100. Default 3.
   */
  readonly maxCrashes?: number;
  /**
   * How many times BullMQ lets a job stall before it fails it on its own. Default `maxCrashes + 1`,
   * so a turn that keeps crashing is parked (with its reason) before BullMQ's limit is reached.
   */
  readonly maxStalledCount?: number;
  /** Delay before a job of a busy session is tried again. Default 250 ms. */
  readonly busyDelayMs?: number;
  /**
   * Keep every session's events in its Redis Stream, whether or not anyone reads them, for
   * `ms` after a session's last event and at most `maxLen` (default 1000) entries a session.
   * Absent (the default): events are written only while a reader is registered
   * (`TurnQueue.events$` / `watch`), kept 5 minutes after the last one; a turn nobody reads
   * sends none.
   */
  readonly eventRetention?: EventRetention;
  /** Names this worker in results and lease holders. Default `hostname:pid:random`. */
  readonly id?: string;
}

/**
 * Runs queued turns ({@link TurnQueue}) with the host's app. Any number of workers, on any
 * machines, may serve one queue: turns of one session run one at a time (a lease in the
 * session store), a worker that dies mid-turn has its job picked up by another once its
 * lock lapses, and that job continues from the session's last checkpoint.
 *
 * @example
 * const app = await buildApp(); // the same plugins and config as the web instances
 * const worker = new TrellisWorker({ url: process.env.REDIS_URL!, store, agent: () => app.agent(spec) });
 * await worker.start();
 */
export class TrellisWorker {
  /** This worker's id, as results and lease holders name it. */
  readonly id: string;
  private readonly names: QueueNames;
  private readonly publisher: Redis;
  private readonly events: EventStreamWriter;
  private readonly worker: Worker<TurnJobData, JobResult>;
  /**
   * Hears `TurnQueue.cancel` (and interrupting sends) for the jobs this worker runs, and
   * readers announcing themselves to its event streams.
   */
  private readonly subscriber: ChannelSubscriber;
  private stopListening: (() => void) | undefined;

  constructor(options: TrellisWorkerOptions) {
    if (!options?.store || typeof options.agent !== 'function') {
      throw new TrellisError(
        'InvalidOptions',
        "A TrellisWorker needs a `store` (the app's session store) and an `agent` resolver (name → Agent)",
        {
          hint: 'new TrellisWorker({ url, store, agent: (name) => app.agent({ name, model, ... }) })',
        },
      );
    }
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.names = new QueueNames(options);
    const lockDuration = options.lockDurationMs ?? 5_000;
    const leaseTtlMs = options.leaseTtlMs ?? 10_000;
    if (!(Number.isSafeInteger(leaseTtlMs) && leaseTtlMs >= 1_000 && leaseTtlMs <= 86_400_000)) {
      throw new TrellisError(
        'InvalidOptions',
        `A TrellisWorker's leaseTtlMs must be a whole number of milliseconds from 1,000 to 86,400,000; got ${String(options.leaseTtlMs)}`,
        { hint: 'Pass e.g. leaseTtlMs: 10000, or leave it out' },
      );
    }
    const maxCrashes = options.maxCrashes ?? 3;
    if (!(Number.isSafeInteger(maxCrashes) && maxCrashes >= 1 && maxCrashes <= 100)) {
      throw new TrellisError(
        'InvalidOptions',
        `A TrellisWorker's maxCrashes must be a whole number from 1 to 100; got ${String(options.maxCrashes)}`,
        { hint: 'Pass e.g. maxCrashes: 3, or leave it out' },
      );
    }
    assertRetention(options.eventRetention);
    // Options checked first: a refused worker leaves no connection open.
    this.publisher = this.names.redis();
    // One subscriber connection for both: cancel messages and readers' announcements.
    this.subscriber = new ChannelSubscriber(this.names.redis());
    this.events = new EventStreamWriter(this.names, this.publisher, this.subscriber, options.eventRetention);
    const runner = new TurnJobRunner({
      workerId: this.id,
      names: this.names,
      store: options.store,
      agent: options.agent,
      publisher: this.publisher,
      events: this.events,
      leaseTtlMs,
      busyDelayMs: options.busyDelayMs ?? 250,
      order: new SessionOrder(this.names, this.publisher),
      maxCrashes,
      parked: new ParkedTurns(this.names, this.publisher),
      promote: async (jobId) => {
        const job = await Job.fromId<TurnJobData, JobResult>(this.worker, jobId);
        if (job !== undefined && (await job.isDelayed())) await job.promote();
      },
    });
    // Three parameters: BullMQ hands the processor the job's AbortSignal (`worker.cancelJob`).
    this.worker = new Worker(this.names.queueName, (job, token, signal) => runner.run(job, token, signal), {
      connection: this.names.bullConnection(),
      prefix: this.names.prefix,
      concurrency: options.concurrency ?? 4,
      lockDuration,
      stalledInterval: options.stalledIntervalMs ?? Math.max(1000, Math.floor(lockDuration / 2)),
      maxStalledCount: options.maxStalledCount ?? maxCrashes + 1,
      autorun: false,
      // Long-poll for 1 s rather than 5: close() waits for the poll to return.
      drainDelay: 1,
      name: this.id,
    });
    // Connection errors are retried by BullMQ; the event alone would crash the process.
    this.worker.on('error', () => undefined);
  }

  /** Starts taking jobs; resolves once the worker is connected. */
  async start(): Promise<void> {
    try {
      await whenReachable(this.names, `start worker ${this.id}`, async () => {
        await Promise.all([this.worker.waitUntilReady(), this.events.start()]);
        this.stopListening = await this.subscriber.listen(cancelChannel(this.names), (text) => {
          const message = parseCancelMessage(text);
          for (const jobId of message?.jobs ?? [])
            this.worker.cancelJob(jobId, message!.keepSteps ? INTERRUPT_REASON : ROLLBACK_REASON);
        });
      });
    } catch (error) {
      // Redis does not answer, so a graceful close would wait for it too: drop the connections.
      void this.worker.close(true).catch(() => undefined);
      this.publisher.disconnect();
      this.events.close();
      this.subscriber.disconnect();
      throw error;
    }
    void this.worker.run().catch(() => undefined);
  }

  /**
   * What is wrong with this worker's Redis for a queue (`maxmemory-policy` not `noeviction`,
   * no persistence), as warnings; none when it is fit. `trellis worker` prints them at start.
   */
  checkRedis(): Promise<string[]> {
    return redisRequirementProblems(this.publisher);
  }

  /** Finishes the jobs it is running (unless `force`), then disconnects. */
  async close(force = false): Promise<void> {
    await this.worker.close(force);
    this.stopListening?.();
    this.events.close();
    await this.subscriber.close();
    await this.publisher.quit().catch(() => this.publisher.disconnect());
  }
}

function assertRetention(retention: EventRetention | undefined): void {
  if (retention === undefined) return;
  const { ms, maxLen } = retention;
  if (!Number.isSafeInteger(ms) || ms < 1 || (maxLen !== undefined && (!Number.isSafeInteger(maxLen) || maxLen < 1))) {
    throw new TrellisError(
      'InvalidOptions',
      `A TrellisWorker's eventRetention needs ms (and maxLen, if given) as whole numbers of at least 1; got ${JSON.stringify(retention)}`,
      {
        hint: 'e.g. eventRetention: { ms: 600_000, maxLen: 1000 }, or leave it out to write events only while someone reads them',
      },
    );
  }
}
