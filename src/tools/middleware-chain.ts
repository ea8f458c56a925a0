import type { NextToolHandler, ToolInvocation, ToolMiddleware, ToolResult } from './tool-middleware.js';

/**
 * Runs an invocation through middleware, outermost first, ending in `inner`. No closure
 * is built per layer ahead of time: each `next` is made only when a layer runs.
 */
export function runChain(chain: readonly ToolMiddleware[], invocation: ToolInvocation, inner: (invocation: ToolInvocation) => Promise<ToolResult>): Promise<ToolResult> {
  const step = (index: number, current: ToolInvocation): Promise<ToolResult> => {
    if (index === chain.length) return inner(current);
    const next: NextToolHandler = (changed) => step(index + 1, changed ?? current);
    return chain[index]!.intercept(current, next);
  };
  return step(0, invocation);
}
