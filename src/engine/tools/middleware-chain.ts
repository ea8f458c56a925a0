import type { NextToolHandler, ToolInvocation, ToolMiddleware, ToolResult } from '../../contract/tool-middleware.js';

/** What a chain ends in: a function, or an object whose `run` calls the tool (no closure per call). */
export type ChainEnd =
  ((invocation: ToolInvocation) => Promise<ToolResult>) | { run(invocation: ToolInvocation): Promise<ToolResult> };

/**
 * Runs an invocation through middleware, outermost first, ending in `inner`. No closure
 * is built per layer ahead of time: each `next` is made only when a layer runs.
 */
export function runChain(
  chain: readonly ToolMiddleware[],
  invocation: ToolInvocation,
  inner: ChainEnd,
): Promise<ToolResult> {
  return step(chain, 0, invocation, inner);
}

function step(
  chain: readonly ToolMiddleware[],
  index: number,
  current: ToolInvocation,
  inner: ChainEnd,
): Promise<ToolResult> {
  if (index === chain.length) return typeof inner === 'function' ? inner(current) : inner.run(current);
  const next: NextToolHandler = (changed) => step(chain, index + 1, changed ?? current, inner);
  return chain[index]!.intercept(current, next);
}
