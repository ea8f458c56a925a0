import type { BudgetCounts } from '../stores/budget-counts.js';

/**
 * Where windowed budget counts live: in this process, in the session store, or in Redis,
 * shared by every worker. One count per key and fixed window (`floor(now / windowMs)`);
 * `add` adds `amount` (0 reads) and returns the count in the window now, atomically however
 * many workers add at once.
 */
export interface BudgetCounter {
  add(key: string, amount: number, windowMs: number, now: number): Promise<number>;
}

/** Counts in this process: right for one process; workers each count their own. */
export class MemoryBudgetCounter implements BudgetCounter {
  readonly #counts = new Map<string, { window: number; count: number }>();

  async add(key: string, amount: number, windowMs: number, now: number): Promise<number> {
    const window = Math.floor(now / windowMs);
    const entry = this.#counts.get(key);
    if (!entry || entry.window !== window) {
      if (amount === 0) return 0;
      this.#counts.set(key, { window, count: amount });
      return amount;
    }
    entry.count += amount;
    return entry.count;
  }
}

/** The part of an ioredis client the Redis counter uses. */
export interface RedisLike {
  multi(): RedisPipelineLike;
  get(key: string): Promise<string | null>;
}

/** A MULTI of an ioredis client, as the counter chains it. */
export interface RedisPipelineLike {
  incrbyfloat(key: string, amount: number): RedisPipelineLike;
  pexpire(key: string, ms: number): RedisPipelineLike;
  exec(): Promise<[Error | null, unknown][] | null>;
}

/**
 * Counts in Redis, shared by every worker of the app: one `INCRBYFLOAT` of the window's key
 * (which expires two windows later) per spend, atomic however many workers count at once; a
 * read is one `GET`.
 *
 * @example
 * new RedisBudgetCounter(new Redis(process.env.REDIS_URL!), 'orders-app')
 */
export class RedisBudgetCounter implements BudgetCounter {
  constructor(
    private readonly redis: RedisLike,
    private readonly prefix = 'trellis',
  ) {}

  async add(key: string, amount: number, windowMs: number, now: number): Promise<number> {
    const redisKey = `${this.prefix}:budget:${key}:${Math.floor(now / windowMs)}`;
    if (amount === 0) return Number((await this.redis.get(redisKey)) ?? 0);
    const replies = await this.redis
      .multi()
      .incrbyfloat(redisKey, amount)
      .pexpire(redisKey, windowMs * 2)
      .exec();
    const [error, count] = replies?.[0] ?? [new Error('no reply'), 0];
    if (error) throw error;
    return Number(count);
  }
}

/** Counts in a session store that keeps budget counts ({@link BudgetCounts}): shared by every process on that store. */
export class StoreBudgetCounter implements BudgetCounter {
  constructor(private readonly store: BudgetCounts) {}

  add(key: string, amount: number, windowMs: number, now: number): Promise<number> {
    const windowStart = Math.floor(now / windowMs) * windowMs;
    // Kept a window longer than it lasts, as Redis keeps its keys.
    return this.store.addBudgetCount(key, windowStart, amount, windowStart + 2 * windowMs, now);
  }
}
