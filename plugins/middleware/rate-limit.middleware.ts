import { IsInt, IsNotEmpty, IsNumber, IsOptional, IsPositive, IsString } from 'class-validator';
import {
  inject,
  injectable,
  optional,
  type ContextKeySpec,
  MIDDLEWARE_OPTIONS,
  errorResult,
  type NextToolHandler,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from 'trellis/plugin';
import { CLOCK, type Clock } from './clock.js';

/** Past this many buckets, full ones are dropped: a full bucket is the same as no bucket. */
const SWEEP_THRESHOLD = 10_000;

/** Options of {@link RateLimitMiddleware}. */
export class RateLimitOptions {
  /** Calls allowed in a burst (the bucket size). Required, a whole number > 0. */
  @IsInt()
  @IsPositive()
  capacity!: number;

  /** Calls regained per second. Required, > 0. */
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  refillPerSecond!: number;

  /** A context key naming the caller (e.g. `'app.user_id'`); when set, each caller has own buckets. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  userKey?: string;
}

interface Bucket {
  tokens: number;
  updatedAt: number;
}

/**
 * Token-bucket rate limiting per tool and, with `userKey`, per (tool, caller). A bucket
 * starts full with `capacity` tokens, each call takes one, and tokens come back at
 * `refillPerSecond`. An empty bucket returns a retryable `RateLimited` result saying how
 * long to wait, without running the tool. A call whose `userKey` is unset shares the
 * anonymous bucket of its tool. Time comes from the {@link CLOCK} binding, else `Date.now`.
 *
 * @example
 * @Middleware(RateLimitMiddleware, { capacity: 5, refillPerSecond: 1, userKey: 'app.user_id' })
 */
@injectable()
export class RateLimitMiddleware implements ToolMiddleware {
  static readonly optionsType = RateLimitOptions;

  /** The user key is optional context: calls without it share the anonymous bucket. */
  static requires(options: unknown): readonly ContextKeySpec[] {
    const userKey = (options as Partial<RateLimitOptions> | undefined)?.userKey;
    return userKey ? [{ key: userKey, optional: true }] : [];
  }

  private readonly capacity: number;
  private readonly refillPerMs: number;
  private readonly userKey: string | undefined;
  private readonly buckets = new Map<string, Bucket>();

  constructor(
    @inject(MIDDLEWARE_OPTIONS) options: RateLimitOptions,
    @inject(CLOCK) @optional() private readonly now: Clock = Date.now,
  ) {
    this.capacity = options.capacity;
    this.refillPerMs = options.refillPerSecond / 1000;
    this.userKey = options.userKey;
  }

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    const user = this.userKey === undefined ? '' : String(call.context.get(this.userKey) ?? '');
    const waitMs = this.take(`${call.tool}\u0000${user}`);
    if (waitMs === 0) return next();
    return errorResult(
      'RateLimited',
      `${call.tool} is rate limited to ${this.capacity} call(s) per burst; try again in ${waitMs} ms`,
      true,
    );
  }

  /** Takes a token; returns 0 on success, else the ms until one is available. */
  private take(id: string): number {
    const now = this.now();
    const bucket = this.buckets.get(id) ?? { tokens: this.capacity, updatedAt: now };
    bucket.tokens = Math.min(this.capacity, bucket.tokens + Math.max(0, now - bucket.updatedAt) * this.refillPerMs);
    bucket.updatedAt = now;
    if (!this.buckets.has(id)) {
      if (this.buckets.size >= SWEEP_THRESHOLD) this.sweep(now);
      this.buckets.set(id, bucket);
    }
    if (bucket.tokens >= 1) {
      bucket.tokens -= 1;
      return 0;
    }
    return Math.ceil((1 - bucket.tokens) / this.refillPerMs);
  }

  private sweep(now: number): void {
    for (const [id, bucket] of this.buckets) {
      if (bucket.tokens + (now - bucket.updatedAt) * this.refillPerMs >= this.capacity) this.buckets.delete(id);
    }
  }
}
