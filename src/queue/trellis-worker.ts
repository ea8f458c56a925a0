import { hostname } from 'node:os';
import { randomUUID } from 'node:crypto';
import { Job, Worker } from 'bullmq';
import type { Redis } from 'ioredis';
import { TrellisError } from '../../index.js';
import { QueueNames, whenReachable, type QueueConnectionOptions } from './queue-connection.js';
import type { JobResult } from './turn-job-result.js';
import { INTERRUPT_REASON, ROLLBACK_REASON, TurnJobRunner, type AgentResolver } from './turn-job-runner.js';
import { ChannelSubscriber } from './channel-subscriber.js';
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
  /** How many times a job may stall (its worker died) before it fails. Default 10. */
  readonly maxStalledCount?: number;
  /** Delay before a job of a busy session is tried again. Default 250 ms. */
  readonly busyDelayMs?: number;
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
  private readonly worker: Worker<TurnJobData, JobResult>;
  /** Hears `TurnQueue.cancel` (and interrupting sends) for the jobs this worker runs. */
  private readonly cancels: ChannelSubscriber;
  private stopListening: (() => void) | undefined;

  constructor(options: TrellisWorkerOptions) {
    if (!options?.store || typeof options.agent !== 'function') {
      throw new TrellisError('InvalidOptions', 'A TrellisWorker needs a `store` (the app\'s session store) and an `agent` resolver (name → Agent)', {
        hint: 'new TrellisWorker({ url, store, agent: (name) => app.agent({ name, model, ... }) })',
      });
    }
    this.id = options.id ?? `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`;
    this.names = new QueueNames(options);
    this.publisher = this.names.redis();
    const lockDuration = options.lockDurationMs ?? 5_000;
    const leaseTtlMs = options.leaseTtlMs ?? 10_000;
    if (!(Number.isSafeInteger(leaseTtlMs) && leaseTtlMs >= 1_000 && leaseTtlMs <= 86_400_000)) {
      throw new TrellisError('InvalidOptions', `A TrellisWorker's leaseTtlMs must be a whole number of milliseconds from 1,000 to 86,400,000; got ${String(options.leaseTtlMs)}`, { hint: 'Pass e.g. leaseTtlMs: 10000, or leave it out' });
    }
    const runner = new TurnJobRunner({
      workerId: this.id,
      names: this.names,
      store: options.store,
      agent: options.agent,
      publisher: this.publisher,
      leaseTtlMs,
      busyDelayMs: options.busyDelayMs ?? 250,
      order: new SessionOrder(this.names, this.publisher),
      promote: async (jobId) => {
        const job = await Job.fromId<TurnJobData, JobResult>(this.worker, jobId);
        if (job !== undefined && (await job.isDelayed())) await job.promote();
      },
    });
    this.cancels = new ChannelSubscriber(this.names.redis());
    // Three parameters: BullMQ hands the processor the job's AbortSignal (`worker.cancelJob`).
    this.worker = new Worker(this.names.queueName, (job, token, signal) => runner.run(job, token, signal), {
      connection: this.names.bullConnection(),
      prefix: this.names.prefix,
      concurrency: options.concurrency ?? 4,
      lockDuration,
      stalledInterval: options.stalledIntervalMs ?? Math.max(1000, Math.floor(lockDuration / 2)),
      maxStalledCount: options.maxStalledCount ?? 10,
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
        await this.worker.waitUntilReady();
        this.stopListening = await this.cancels.listen(cancelChannel(this.names), (text) => {
          const message = parseCancelMessage(text);
          for (const jobId of message?.jobs ?? []) this.worker.cancelJob(jobId, message!.keepSteps ? INTERRUPT_REASON : ROLLBACK_REASON);
        });
      });
    } catch (error) {
      // Redis does not answer, so a graceful close would wait for it too: drop the connections.
      void this.worker.close(true).catch(() => undefined);
      this.publisher.disconnect();
      this.cancels.disconnect();
      throw error;
    }
    void this.worker.run().catch(() => undefined);
  }

  /** Finishes the jobs it is running (unless `force`), then disconnects. */
  async close(force = false): Promise<void> {
    await this.worker.close(force);
    this.stopListening?.();
    await this.cancels.close();
    await this.publisher.quit().catch(() => this.publisher.disconnect());
  }
}
