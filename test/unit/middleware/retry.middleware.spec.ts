import 'reflect-metadata';
import { afterEach, jest } from '@jest/globals';
import { Container } from 'inversify';
import {
  MIDDLEWARE_OPTIONS,
  okResult,
  type ToolInvocation,
  type ToolNotice,
} from '../../../src/contract/tool-middleware.js';
import { RetryMiddleware, type RetryOptions } from '../../../plugins/middleware/retry.middleware.js';
import { invocation, permanent, scriptedNext, transient, transientError } from './fake-invocation.js';

function build(options: Partial<RetryOptions>) {
  const container = new Container();
  container.bind(MIDDLEWARE_OPTIONS).toConstantValue(options);
  container.bind(RetryMiddleware).toSelf();
  const seen: ToolNotice[] = [];
  const middleware = container.get(RetryMiddleware);
  // Every call goes through an invocation whose notices are recorded.
  const intercept = (call: ToolInvocation, next: Parameters<RetryMiddleware['intercept']>[1]) =>
    middleware.intercept({ ...call, notify: (n) => seen.push(n) }, next);
  return { middleware: { intercept }, events: seen };
}

afterEach(() => {
  jest.restoreAllMocks();
});

describe('RetryMiddleware', () => {
  it('retries retryable failures until one succeeds', async () => {
    const { middleware } = build({ baseDelayMs: 1 });
    const { next, calls } = scriptedNext(transient, transient, okResult('found'));

    const result = await middleware.intercept(invocation(), next);

    expect(result).toEqual(okResult('found'));
    expect(calls).toHaveLength(3);
  });

  it('does not retry non-retryable errors', async () => {
    const { middleware, events } = build({ baseDelayMs: 1 });
    const { next, calls } = scriptedNext(permanent, okResult('never'));

    const result = await middleware.intercept(invocation(), next);

    expect(result).toBe(permanent);
    expect(calls).toHaveLength(1);
    expect(events).toHaveLength(0);
  });

  it('does not retry successes', async () => {
    const { middleware } = build({});
    const { next, calls } = scriptedNext(okResult(1));
    await middleware.intercept(invocation(), next);
    expect(calls).toHaveLength(1);
  });

  it('gives up after maxRetries and returns the last failure', async () => {
    const { middleware } = build({ maxRetries: 3, baseDelayMs: 1 });
    const { next, calls } = scriptedNext(transient);

    const result = await middleware.intercept(invocation(), next);

    expect(result).toBe(transient);
    expect(calls).toHaveLength(4);
  });

  it('defaults to two retries', async () => {
    const { middleware } = build({ baseDelayMs: 1 });
    const { next, calls } = scriptedNext(transient);
    await middleware.intercept(invocation(), next);
    expect(calls).toHaveLength(3);
  });

  it('passes a raised attempt to the inner layers on each retry', async () => {
    const { middleware } = build({ baseDelayMs: 1 });
    const { next, calls } = scriptedNext(transient);

    await middleware.intercept(invocation({ attempt: 1 }), next);

    expect(calls.map((call) => call?.attempt)).toEqual([1, 2, 3]);
    expect(calls[2]?.callId).toBe('call-1');
  });

  it('emits one tool.retry event per retry with increasing attempts', async () => {
    const { middleware, events } = build({ maxRetries: 2, baseDelayMs: 1 });
    const { next } = scriptedNext(transient);

    await middleware.intercept(invocation(), next);

    expect(events).toEqual([
      expect.objectContaining({ type: 'tool.retry', attempt: 2, error: transientError }),
      expect.objectContaining({ type: 'tool.retry', attempt: 3 }),
    ]);
  });

  it('waits a full-jitter exponential backoff capped at maxDelayMs', async () => {
    const { middleware, events } = build({ maxRetries: 3, baseDelayMs: 10, factor: 2, maxDelayMs: 25 });
    const random = jest.spyOn(Math, 'random').mockReturnValue(0.999);
    const { next } = scriptedNext(transient);

    await middleware.intercept(invocation(), next);

    // Ceilings 10, 20, min(40, 25): a random fraction of each.
    expect(events.map((event) => (event.type === 'tool.retry' ? event.delayMs : -1))).toEqual([9, 19, 24]);
    random.mockReturnValue(0);
    events.length = 0;
    await middleware.intercept(invocation(), next);
    expect(events.map((event) => (event.type === 'tool.retry' ? event.delayMs : -1))).toEqual([0, 0, 0]);
  });

  it('stops early when the call is cancelled during the backoff', async () => {
    const { middleware } = build({ baseDelayMs: 60_000, maxDelayMs: 60_000 });
    jest.spyOn(Math, 'random').mockReturnValue(0.5);
    const controller = new AbortController();
    const { next, calls } = scriptedNext(transient, okResult('late'));
    setTimeout(() => controller.abort(), 5);

    const started = Date.now();
    const result = await middleware.intercept(invocation({ signal: controller.signal }), next);

    expect(result).toBe(transient);
    expect(calls).toHaveLength(1);
    expect(Date.now() - started).toBeLessThan(5_000);
  });

  it('does not retry a call already cancelled', async () => {
    const { middleware } = build({ baseDelayMs: 1 });
    const controller = new AbortController();
    controller.abort();
    const { next, calls } = scriptedNext(transient);

    await middleware.intercept(invocation({ signal: controller.signal }), next);

    expect(calls).toHaveLength(1);
  });

  it('works without an EventBus bound', async () => {
    const container = new Container();
    container.bind(MIDDLEWARE_OPTIONS).toConstantValue({ baseDelayMs: 1 });
    container.bind(RetryMiddleware).toSelf();
    const { next, calls } = scriptedNext(transient, okResult('ok'));

    const result = await container.get(RetryMiddleware).intercept(invocation(), next);

    expect(result.ok).toBe(true);
    expect(calls).toHaveLength(2);
  });
});
