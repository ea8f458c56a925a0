import 'reflect-metadata';
import { Container } from 'inversify';
import { MIDDLEWARE_OPTIONS, okResult, type ToolResult } from '../../../src/contract/tool-middleware.js';
import { RateLimitMiddleware, type RateLimitOptions } from '../../../plugins/middleware/rate-limit.middleware.js';
import { CLOCK, type Clock } from '../../../plugins/middleware/clock.js';
import { invocation, scriptedNext } from './fake-invocation.js';

function build(options: RateLimitOptions) {
  const clock = { now: 1_000_000 };
  const container = new Container();
  container.bind(MIDDLEWARE_OPTIONS).toConstantValue(options);
  container.bind<Clock>(CLOCK).toConstantValue(() => clock.now);
  container.bind(RateLimitMiddleware).toSelf();
  return { middleware: container.get(RateLimitMiddleware), clock };
}

const { next, calls } = scriptedNext(okResult('ran'));
const okCount = (results: ToolResult[]) => results.filter((result) => result.ok).length;

beforeEach(() => {
  calls.length = 0;
});

describe('RateLimitMiddleware', () => {
  it('allows a burst of capacity calls, then returns a retryable RateLimited with the wait time', async () => {
    const { middleware } = build({ capacity: 2, refillPerSecond: 0.5 });
    const results = [];
    for (let i = 0; i < 3; i++) results.push(await middleware.intercept(invocation(), next));

    expect(okCount(results)).toBe(2);
    expect(calls).toHaveLength(2);
    expect(results[2]).toMatchObject({ ok: false, error: { code: 'RateLimited', retryable: true } });
    // One token at 0.5/s takes 2000 ms.
    if (!results[2]?.ok) expect(results[2]?.error.message).toContain('2000 ms');
  });

  it('refills tokens over time, never beyond capacity', async () => {
    const { middleware, clock } = build({ capacity: 2, refillPerSecond: 1 });
    await middleware.intercept(invocation(), next);
    await middleware.intercept(invocation(), next);
    expect((await middleware.intercept(invocation(), next)).ok).toBe(false);

    clock.now += 500;
    const half = await middleware.intercept(invocation(), next);
    expect(half.ok).toBe(false);
    if (!half.ok) expect(half.error.message).toContain('500 ms');

    clock.now += 500;
    expect((await middleware.intercept(invocation(), next)).ok).toBe(true);

    clock.now += 60_000;
    const results = [];
    for (let i = 0; i < 4; i++) results.push(await middleware.intercept(invocation(), next));
    expect(okCount(results)).toBe(2);
  });

  it('keeps a bucket per tool', async () => {
    const { middleware } = build({ capacity: 1, refillPerSecond: 1 });
    expect((await middleware.intercept(invocation({ tool: 'orders.lookup' }), next)).ok).toBe(true);
    expect((await middleware.intercept(invocation({ tool: 'orders.lookup' }), next)).ok).toBe(false);
    expect((await middleware.intercept(invocation({ tool: 'orders.list' }), next)).ok).toBe(true);
  });

  it('isolates users when userKey is set', async () => {
    const { middleware } = build({ capacity: 1, refillPerSecond: 1, userKey: 'app.user_id' });
    const ada = invocation({ values: { 'app.user_id': 'ada' } });
    const bob = invocation({ values: { 'app.user_id': 'bob' } });

    expect((await middleware.intercept(ada, next)).ok).toBe(true);
    expect((await middleware.intercept(ada, next)).ok).toBe(false);
    expect((await middleware.intercept(bob, next)).ok).toBe(true);
    expect((await middleware.intercept(bob, next)).ok).toBe(false);
    expect(calls).toHaveLength(2);
  });

  it('shares one bucket among callers when userKey is not set', async () => {
    const { middleware } = build({ capacity: 1, refillPerSecond: 1 });
    expect((await middleware.intercept(invocation({ values: { 'app.user_id': 'ada' } }), next)).ok).toBe(true);
    expect((await middleware.intercept(invocation({ values: { 'app.user_id': 'bob' } }), next)).ok).toBe(false);
  });

  it('declares userKey as optional context, and nothing without it', () => {
    expect(RateLimitMiddleware.requires({ capacity: 1, refillPerSecond: 1, userKey: 'app.user_id' })).toEqual([
      { key: 'app.user_id', optional: true },
    ]);
    expect(RateLimitMiddleware.requires({ capacity: 1, refillPerSecond: 1 })).toEqual([]);
  });
});
