import { Redis } from 'ioredis';
import { TrellisError } from '../../../index.js';

/** Where a {@link TurnQueue} and its {@link TrellisWorker}s meet: one Redis, one queue. */
export interface QueueConnectionOptions {
  /** `redis://[user:password@]host:6379[/db]`. */
  readonly url: string;
  /** The BullMQ queue name. Default `turns`. */
  readonly queueName?: string;
  /** Prefix of every Redis key and channel, so several apps share one Redis. Default `trellis`. */
  readonly prefix?: string;
  /**
   * How long enqueueing a turn or starting a worker waits for Redis to answer before it
   * fails `StoreUnavailable` (Redis down, a wrong host). Default 10 s. Once a turn is queued,
   * its result is awaited until Redis comes back or the turn is found in the store, at most
   * `TurnQueueOptions.waitMs`.
   */
  readonly connectTimeoutMs?: number;
}

/** The resolved names of one queue's keys and pub/sub channels. */
export class QueueNames {
  readonly url: string;
  readonly queueName: string;
  readonly prefix: string;
  readonly connectTimeoutMs: number;

  constructor(options: QueueConnectionOptions) {
    if (typeof options?.url !== 'string' || !/^rediss?:\/\//.test(options.url)) {
      throw new TrellisError('InvalidOptions', 'The turn queue needs a Redis URL (redis://host:6379)', {
        hint: 'Pass { url: process.env.REDIS_URL } or set `queue` in trellis.config',
      });
    }
    this.url = options.url;
    this.queueName = options.queueName ?? 'turns';
    this.prefix = options.prefix ?? 'trellis';
    this.connectTimeoutMs = options.connectTimeoutMs ?? 10_000;
    if (!Number.isFinite(this.connectTimeoutMs) || this.connectTimeoutMs <= 0) {
      throw new TrellisError(
        'InvalidOptions',
        `The turn queue's connectTimeoutMs must be a positive number of milliseconds; got ${String(options.connectTimeoutMs)}`,
      );
    }
    for (const [field, value] of [
      ['queueName', this.queueName],
      ['prefix', this.prefix],
    ] as const) {
      if (!/^[A-Za-z0-9_-]{1,64}$/.test(value)) {
        throw new TrellisError(
          'InvalidOptions',
          `The turn queue's ${field} "${value}" may only hold letters, digits, "_" and "-"`,
          { details: { [field]: value } },
        );
      }
    }
  }

  /** Where the result of job `jobId` is published. */
  resultChannel(jobId: string): string {
    return `${this.prefix}:${this.queueName}:result:${jobId}`;
  }

  /** Where the events of session `sessionId` are published, whichever worker runs it. */
  eventChannel(sessionId: string): string {
    return `${this.prefix}:${this.queueName}:events:${sessionId}`;
  }

  /** The capped Redis Stream that keeps the events of session `sessionId` for readers that reconnect. */
  eventStream(sessionId: string): string {
    return `${this.prefix}:${this.queueName}:stream:${sessionId}`;
  }

  /** Present (with a TTL) while a reader of session `sessionId`'s events is registered. */
  readerKey(sessionId: string): string {
    return `${this.prefix}:${this.queueName}:reader:${sessionId}`;
  }

  /** Where a new reader announces its session, so a worker running a turn of it starts writing its events. */
  readersChannel(): string {
    return `${this.prefix}:${this.queueName}:readers`;
  }

  /** The hash of the turns parked as poison (`TurnQueue.parkedTurns`), by job id. */
  parkedKey(): string {
    return `${this.prefix}:${this.queueName}:parked:turns`;
  }

  /** The lease key a worker takes so that turns of one session run one at a time. */
  leaseKey(sessionId: string): string {
    return `queue:${this.queueName}:${sessionId}`;
  }

  /** BullMQ's connection options: a worker's blocking commands must never give up. */
  bullConnection(): { url: string; maxRetriesPerRequest: null } {
    return { url: this.url, maxRetriesPerRequest: null };
  }

  /** A plain ioredis connection (publishing, subscribing). */
  redis(): Redis {
    const redis = new Redis(this.url, { maxRetriesPerRequest: null, lazyConnect: false });
    // Connection errors surface through the commands that fail; the event alone would crash the process.
    redis.on('error', () => undefined);
    return redis;
  }
}

/**
 * Whether `work` settles within `ms`; its rejection is rethrown. The timer never outlives
 * the answer.
 */
export async function settlesWithin(ms: number, work: Promise<unknown>): Promise<boolean> {
  let timer: NodeJS.Timeout | undefined;
  const timedOut = new Promise<false>((resolve) => {
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await Promise.race([work.then(() => true), timedOut]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Waits for `ready` (a Redis round trip) at most `names.connectTimeoutMs`: connections retry
 * forever (BullMQ needs that of a worker's blocking commands), so without a deadline a
 * stopped Redis or a wrong host would make an enqueue or a worker start wait forever.
 */
export async function whenReachable(names: QueueNames, what: string, ready: () => Promise<unknown>): Promise<void> {
  const host = new URL(names.url).host;
  let answered: boolean;
  try {
    answered = await settlesWithin(names.connectTimeoutMs, ready());
  } catch (error) {
    throw new TrellisError(
      'StoreUnavailable',
      `Cannot ${what}: Redis at ${host}: ${error instanceof Error ? error.message : String(error)}`,
      { kind: 'system', retryable: true, cause: error },
    );
  }
  if (!answered) {
    throw new TrellisError(
      'StoreUnavailable',
      `Cannot ${what}: Redis at ${host} did not answer within ${names.connectTimeoutMs} ms`,
      {
        hint: 'Check that Redis is running and that the queue URL names it',
        kind: 'system',
        retryable: true,
      },
    );
  }
}
