import { IsInt, IsNumber, IsOptional, Max, Min } from 'class-validator';
import {
  inject,
  injectable,
  optional,
  MIDDLEWARE_OPTIONS,
  type NextToolHandler,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from 'trellis/plugin';

/** Options of {@link RetryMiddleware}; every field has a default. */
export class RetryOptions {
  /** Retries after the first try (so at most `maxRetries + 1` calls). 0..10, default 2. */
  @IsOptional()
  @IsInt()
  @Min(0)
  @Max(10)
  maxRetries = 2;

  /** The backoff ceiling of the first retry, in ms. Default 100. */
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  baseDelayMs = 100;

  /** No wait is longer than this, in ms. Default 5000. */
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(0)
  maxDelayMs = 5000;

  /** How much the ceiling grows per retry. Default 2. */
  @IsOptional()
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(1)
  factor = 2;
}

/**
 * Calls the tool again when it fails with a retryable error (`error.retryable === true`:
 * timeouts, rate limits, network faults); any other failure is returned at once.
 * Waits use exponential backoff with full jitter: retry `n` (0-based) waits a random time
 * in `[0, min(maxDelayMs, baseDelayMs * factor^n))`, which spreads retries of many callers.
 * Each retry emits a `tool.retry` event and reaches the inner layers with `attempt` raised
 * by one. A cancelled call is not retried: the last result is returned.
 *
 * @example
 * @Middleware(RetryMiddleware, { maxRetries: 3, baseDelayMs: 200 })
 */
@injectable()
export class RetryMiddleware implements ToolMiddleware {
  static readonly optionsType = RetryOptions;

  private readonly maxRetries: number;
  private readonly baseDelayMs: number;
  private readonly maxDelayMs: number;
  private readonly factor: number;

  constructor(@inject(MIDDLEWARE_OPTIONS) @optional() options: Partial<RetryOptions> | undefined) {
    const defaults = new RetryOptions();
    this.maxRetries = options?.maxRetries ?? defaults.maxRetries;
    this.baseDelayMs = options?.baseDelayMs ?? defaults.baseDelayMs;
    this.maxDelayMs = options?.maxDelayMs ?? defaults.maxDelayMs;
    this.factor = options?.factor ?? defaults.factor;
  }

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    let result = await next(call);
    for (let retry = 0; retry < this.maxRetries; retry++) {
      if (result.ok || !result.error.retryable || call.signal.aborted) return result;
      const delayMs = this.backoff(retry);
      const attempt = call.attempt + retry + 1;
      call.notify({ type: 'tool.retry', attempt, delayMs, error: result.error });
      if (!(await sleep(delayMs, call.signal))) return result;
      result = await next({ ...call, attempt });
    }
    return result;
  }

  private backoff(retry: number): number {
    const ceiling = Math.min(this.maxDelayMs, this.baseDelayMs * this.factor ** retry);
    return Math.floor(Math.random() * ceiling);
  }
}

/** Resolves `true` after `ms`, or `false` as soon as `signal` aborts. */
function sleep(ms: number, signal: AbortSignal): Promise<boolean> {
  if (signal.aborted) return Promise.resolve(false);
  return new Promise((resolve) => {
    const onAbort = (): void => {
      clearTimeout(timer);
      resolve(false);
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve(true);
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}
