import type { ToolContext } from '../../../src/contract/plugin-context.js';
import {
  errorResult,
  okResult,
  type ToolErrorInfo,
  type ToolInvocation,
  type ToolResult,
} from '../../../src/contract/tool-middleware.js';

/** A minimal ToolContext whose `get` reads from a map; writes are not needed by middleware. */
export function fakeContext(values: Record<string, unknown> = {}, signal = new AbortController().signal): ToolContext {
  const map = new Map(Object.entries(values));
  return {
    plugin: 'orders',
    sessionId: 'session-1',
    callId: 'call-1',
    tool: 'orders.lookup',
    turnIndex: 0,
    idempotencyKey: 'session-1:0:call-1',
    signal,
    deps: {},
    get: <T>(key: string) => map.get(key) as T | undefined,
    set: () => undefined,
    update: () => undefined,
    emit: () => undefined,
    schedule: () => undefined,
    promote: () => undefined,
  };
}

/** A hand-built invocation of `orders.lookup`; override any field. */
export function invocation(
  overrides: Partial<ToolInvocation> & { values?: Record<string, unknown> } = {},
): ToolInvocation {
  const { values, ...rest } = overrides;
  const signal = rest.signal ?? new AbortController().signal;
  return {
    callId: 'call-1',
    tool: 'orders.lookup',
    plugin: 'orders',
    args: { id: 'A-1' },
    context: fakeContext(values, signal),
    signal,
    attempt: 1,
    notify: () => undefined,
    ...rest,
  };
}

/** A fake `next` that returns the scripted results in order (the last one repeats) and records what it saw. */
export function scriptedNext(...results: ToolResult[]) {
  const calls: (ToolInvocation | undefined)[] = [];
  const next = async (call?: ToolInvocation): Promise<ToolResult> => {
    calls.push(call);
    return results[Math.min(calls.length - 1, results.length - 1)] ?? okResult(undefined);
  };
  return { next, calls };
}

export const transientError: ToolErrorInfo = { code: 'ToolFailed', message: 'upstream unavailable', retryable: true };
export const transient: ToolResult = { ok: false, error: transientError };
export const permanent = errorResult('ToolFailed', 'bad order id', false);
