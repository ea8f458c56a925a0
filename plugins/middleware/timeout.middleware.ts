import { IsNumber, IsPositive } from 'class-validator';
import {
  inject,
  injectable,
  TrellisError,
  MIDDLEWARE_OPTIONS,
  errorResult,
  type NextToolHandler,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from 'trellis/plugin';

/** Options of {@link TimeoutMiddleware}. */
export class TimeoutOptions {
  /** How long the inner layers may run, in ms. Required, > 0. */
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  ms!: number;
}

/**
 * Bounds how long the inner layers (and the tool) may take. The inner layers get a signal
 * that aborts on the caller's cancellation or when `ms` elapses; on expiry the call
 * returns a retryable `ToolTimeout` result without waiting for a tool that ignores its
 * signal. Declared outside `RetryMiddleware` it bounds all attempts together; inside, each one.
 *
 * @example
 * @Middleware(TimeoutMiddleware, { ms: 2000 })
 */
@injectable()
export class TimeoutMiddleware implements ToolMiddleware {
  static readonly optionsType = TimeoutOptions;

  private readonly ms: number;

  constructor(@inject(MIDDLEWARE_OPTIONS) options: TimeoutOptions) {
    this.ms = options.ms;
  }

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    const controller = new AbortController();
    const forward = (): void => controller.abort(call.signal.reason);
    if (call.signal.aborted) forward();
    else call.signal.addEventListener('abort', forward, { once: true });

    let timer: NodeJS.Timeout | undefined;
    const expired = new Promise<ToolResult>((resolve) => {
      timer = setTimeout(() => {
        const message = `${call.tool} took longer than ${this.ms} ms. Raise the timeout or make the tool faster`;
        controller.abort(new TrellisError('ToolTimeout', message, { retryable: true }));
        resolve(errorResult('ToolTimeout', message, true));
      }, this.ms);
    });

    const inner = next({ ...call, signal: controller.signal });
    // A late failure of an abandoned call must not surface as an unhandled rejection.
    inner.catch(() => undefined);
    try {
      return await Promise.race([inner, expired]);
    } finally {
      clearTimeout(timer);
      call.signal.removeEventListener('abort', forward);
    }
  }
}
