import 'reflect-metadata';
import { Container } from 'inversify';
import {
  MIDDLEWARE_OPTIONS,
  errorResult,
  okResult,
  type ToolInvocation,
  type ToolResult,
} from '../../../src/contract/tool-middleware.js';
import { CacheMiddleware, type CacheOptions } from '../../../plugins/middleware/cache.middleware.js';
import { CLOCK, type Clock } from '../../../plugins/middleware/clock.js';
import { invocation } from './fake-invocation.js';

function build(options: Partial<CacheOptions>) {
  const clock = { now: 0 };
  const container = new Container();
  container.bind(MIDDLEWARE_OPTIONS).toConstantValue(options);
  container.bind<Clock>(CLOCK).toConstantValue(() => clock.now);
  container.bind(CacheMiddleware).toSelf();
  return { middleware: container.get(CacheMiddleware), clock };
}

/** A tool whose value counts its runs, so a cached answer is visible. */
function countingNext() {
  const state = { runs: 0 };
  const next = async (_call?: ToolInvocation): Promise<ToolResult> => okResult({ run: ++state.runs });
  return { next, state };
}

class LookupInput {
  constructor(
    readonly id: string,
    readonly filter: Record<string, unknown>,
  ) {}
}

describe('CacheMiddleware', () => {
  it('returns the cached result for the same tool and args', async () => {
    const { middleware } = build({ ttlMs: 1_000 });
    const { next, state } = countingNext();

    const first = await middleware.intercept(invocation({ args: { id: 'A-1' } }), next);
    const second = await middleware.intercept(invocation({ args: { id: 'A-1' } }), next);

    expect(second).toEqual(first);
    expect(state.runs).toBe(1);
  });

  it('keys on canonical args: key order does not matter at any depth', async () => {
    const { middleware } = build({ ttlMs: 1_000 });
    const { next, state } = countingNext();

    await middleware.intercept(invocation({ args: { a: 1, b: { x: [1, { p: 1, q: 2 }], y: 2 } } }), next);
    await middleware.intercept(invocation({ args: { b: { y: 2, x: [1, { q: 2, p: 1 }] }, a: 1 } }), next);
    // Instances of the input DTO key the same as plain objects with the same fields.
    await middleware.intercept(invocation({ args: new LookupInput('A-1', { z: 1, a: 2 }) }), next);
    await middleware.intercept(invocation({ args: { filter: { a: 2, z: 1 }, id: 'A-1' } }), next);

    expect(state.runs).toBe(2);
  });

  it('keeps different args, array orders and tools apart', async () => {
    const { middleware } = build({ ttlMs: 1_000 });
    const { next, state } = countingNext();

    await middleware.intercept(invocation({ args: { ids: [1, 2] } }), next);
    await middleware.intercept(invocation({ args: { ids: [2, 1] } }), next);
    await middleware.intercept(invocation({ args: { ids: [1, 2] }, tool: 'orders.list' }), next);

    expect(state.runs).toBe(3);
  });

  it('recomputes an expired entry', async () => {
    const { middleware, clock } = build({ ttlMs: 1_000 });
    const { next } = countingNext();

    await middleware.intercept(invocation(), next);
    clock.now = 999;
    expect(await middleware.intercept(invocation(), next)).toEqual(okResult({ run: 1 }));
    clock.now = 1_000;
    expect(await middleware.intercept(invocation(), next)).toEqual(okResult({ run: 2 }));
    clock.now = 1_500;
    expect(await middleware.intercept(invocation(), next)).toEqual(okResult({ run: 2 }));
  });

  it('does not cache failures', async () => {
    const { middleware } = build({ ttlMs: 1_000 });
    let runs = 0;
    const next = async (): Promise<ToolResult> =>
      ++runs === 1 ? errorResult('ToolFailed', 'down', true) : okResult('up');

    expect((await middleware.intercept(invocation(), next)).ok).toBe(false);
    expect(await middleware.intercept(invocation(), next)).toEqual(okResult('up'));
    expect(await middleware.intercept(invocation(), next)).toEqual(okResult('up'));
    expect(runs).toBe(2);
  });

  it('evicts the oldest entry when full', async () => {
    const { middleware } = build({ ttlMs: 60_000, maxEntries: 2 });
    const { next, state } = countingNext();

    await middleware.intercept(invocation({ args: { id: 1 } }), next);
    await middleware.intercept(invocation({ args: { id: 2 } }), next);
    await middleware.intercept(invocation({ args: { id: 3 } }), next);
    expect(state.runs).toBe(3);

    await middleware.intercept(invocation({ args: { id: 3 } }), next);
    await middleware.intercept(invocation({ args: { id: 2 } }), next);
    expect(state.runs).toBe(3);
    await middleware.intercept(invocation({ args: { id: 1 } }), next);
    expect(state.runs).toBe(4);
  });

  it('passes args it cannot serialize straight through', async () => {
    const { middleware } = build({ ttlMs: 1_000 });
    const { next, state } = countingNext();
    await middleware.intercept(invocation({ args: { n: 1n } }), next);
    await middleware.intercept(invocation({ args: { n: 1n } }), next);
    expect(state.runs).toBe(2);
  });
});
