import 'reflect-metadata';
import { Container } from 'inversify';
import {
  MIDDLEWARE_OPTIONS,
  okResult,
  type ToolInvocation,
  type ToolResult,
} from '../../../src/contract/tool-middleware.js';
import { TimeoutMiddleware, type TimeoutOptions } from '../../../plugins/middleware/timeout.middleware.js';
import { invocation } from './fake-invocation.js';

function build(options: TimeoutOptions): TimeoutMiddleware {
  const container = new Container();
  container.bind(MIDDLEWARE_OPTIONS).toConstantValue(options);
  container.bind(TimeoutMiddleware).toSelf();
  return container.get(TimeoutMiddleware);
}

/** A tool that never finishes on its own; it records the signal it was given. */
function hangingNext() {
  const seen: { signal?: AbortSignal } = {};
  const next = (call?: ToolInvocation): Promise<ToolResult> => {
    seen.signal = call?.signal;
    return new Promise<ToolResult>(() => undefined);
  };
  return { next, seen };
}

describe('TimeoutMiddleware', () => {
  it('returns the inner result when it finishes in time', async () => {
    const result = await build({ ms: 1_000 }).intercept(invocation(), async () => okResult('fast'));
    expect(result).toEqual(okResult('fast'));
  });

  it('returns a retryable ToolTimeout naming the tool and the limit on expiry', async () => {
    const { next } = hangingNext();

    const result = await build({ ms: 20 }).intercept(invocation(), next);

    expect(result).toEqual({
      ok: false,
      error: {
        code: 'ToolTimeout',
        message: 'orders.lookup took longer than 20 ms. Raise the timeout or make the tool faster',
        retryable: true,
      },
    });
  });

  it('passes a new signal down and aborts it on expiry', async () => {
    const outer = new AbortController();
    const { next, seen } = hangingNext();

    await build({ ms: 10 }).intercept(invocation({ signal: outer.signal }), next);

    expect(seen.signal).toBeDefined();
    expect(seen.signal).not.toBe(outer.signal);
    expect(seen.signal?.aborted).toBe(true);
    expect(seen.signal?.reason).toMatchObject({ code: 'ToolTimeout' });
    expect(outer.signal.aborted).toBe(false);
  });

  it('aborts the inner signal when the caller cancels', async () => {
    const outer = new AbortController();
    let inner: AbortSignal | undefined;
    const next = (call?: ToolInvocation) =>
      new Promise<ToolResult>((resolve) => {
        inner = call?.signal;
        call?.signal.addEventListener('abort', () =>
          resolve({ ok: false, error: { code: 'Cancelled', message: 'stopped', retryable: false } }),
        );
      });
    setTimeout(() => outer.abort('user cancelled'), 5);

    const result = await build({ ms: 10_000 }).intercept(invocation({ signal: outer.signal }), next);

    expect(inner?.aborted).toBe(true);
    expect(inner?.reason).toBe('user cancelled');
    expect(result).toMatchObject({ ok: false, error: { code: 'Cancelled' } });
  });

  it('passes an already aborted signal down as aborted', async () => {
    const outer = new AbortController();
    outer.abort();
    let inner: AbortSignal | undefined;
    await build({ ms: 1_000 }).intercept(invocation({ signal: outer.signal }), async (call) => {
      inner = call?.signal;
      return okResult(null);
    });
    expect(inner?.aborted).toBe(true);
  });

  it('clears its timer and listener once the inner layers finish', async () => {
    const outer = new AbortController();
    let inner: AbortSignal | undefined;
    await build({ ms: 30 }).intercept(invocation({ signal: outer.signal }), async (call) => {
      inner = call?.signal;
      return okResult('done');
    });

    await new Promise((resolve) => setTimeout(resolve, 60));
    outer.abort();

    // Neither the expired timer nor the caller's later abort reached the finished call.
    expect(inner?.aborted).toBe(false);
  });

  it('keeps the rest of the invocation unchanged', async () => {
    let seen: ToolInvocation | undefined;
    const call = invocation({ attempt: 3 });
    await build({ ms: 1_000 }).intercept(call, async (inner) => {
      seen = inner;
      return okResult(null);
    });
    expect(seen).toMatchObject({ callId: call.callId, tool: call.tool, args: call.args, attempt: 3 });
  });
});
