/**
 * Where budget counts live: in this process, or shared by every worker (Redis). One count
 * per key and fixed window; `increment` adds one and returns the count in the window now.
 */
export interface BudgetCounter {
  increment(key: string, windowMs: number, now: number): Promise<number>;
}

/** Counts in this process: right for one process; workers each count their own. */
export class MemoryBudgetCounter implements BudgetCounter {
  readonly #counts = new Map<string, { window: number; count: number }>();

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    const window = Math.floor(now / windowMs);
    const entry = this.#counts.get(key);
    if (!entry || entry.window !== window) {
      this.#counts.set(key, { window, count: 1 });
      return 1;
    }
    return ++entry.count;
  }
}

/** The part of an ioredis client the Redis counter uses. */
export interface RedisLike {
  multi(): RedisPipelineLike;
}

/** A MULTI of an ioredis client, as the counter chains it. */
export interface RedisPipelineLike {
  incr(key: string): RedisPipelineLike;
  pexpire(key: string, ms: number): RedisPipelineLike;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/**
 * Counts in Redis, shared by every worker of the app: one `INCR` of the window's key (which
 * expires two windows later) per call, atomic however many workers count at once.
 *
 * @example
 * new RedisBudgetCounter(new Redis(process.env.REDIS_URL!), 'orders-app')
 */
export class RedisBudgetCounter implements BudgetCounter {
  constructor(
    private readonly redis: RedisLike,
    private readonly prefix = 'trellis',
  ) {}

  async increment(key: string, windowMs: number, now: number): Promise<number> {
    const redisKey = `${this.prefix}:budget:${key}:${Math.floor(now / windowMs)}`;
    const replies = await this.redis.multi().incr(redisKey).pexpire(redisKey, windowMs * 2).exec();
    const [error, count] = replies?.[0] ?? [new Error('no reply'), 0];
    if (error) throw error;
    return Number(count);
  }
}
