import { describeError } from '../../errors/describe-error.js';
import { setSignal, type MemberContext } from '../context/member-context.js';
import type { ToolResult } from '../../contract/tool-result.js';
import { TrellisError, type TrellisErrorCode } from '../../errors/trellis-error.js';
import { hookResultKind, isHookResult, type HookResult } from '../hooks/hook-results.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { NEVER_ABORTED } from '../context/never-signal.js';
import type { ToolInvocation } from '../../contract/tool-middleware.js';
import { errorResult } from '../../contract/tool-result.js';

/**
 * The tool itself, at the end of its middleware chain: under its `timeoutMs` and the
 * caller's signal when either can stop it, directly otherwise.
 */
export function invokeTool(tool: RegisteredTool, invocation: ToolInvocation, ctx: MemberContext): Promise<ToolResult> {
  setSignal(ctx, invocation.signal);
  // Nothing can stop this call (no timeout, a signal that never aborts): call the tool
  // directly, with no listener, no race and no extra promise when it answers synchronously.
  if (tool.timeoutMs !== undefined || ctx.signal !== NEVER_ABORTED) return invokeGuarded(tool, invocation, ctx);
  let out: unknown;
  try {
    out = tool.fn(invocation.args, ctx as never);
  } catch (error) {
    return Promise.resolve(fromError(error, 'ToolFailed', tool.name));
  }
  if (isThenable(out)) return Promise.resolve(out).then(toolValue, failureOf(tool));
  return Promise.resolve(toolValue(out));
}

/** A middleware chain's or tool's rejection as the call's error result. */
export function toolFailure(error: unknown): ToolResult {
  return fromError(error, 'ToolFailed');
}

/** An error as a call's error result: a `TrellisError` keeps its code, anything else is described. */
export function fromError(error: unknown, code: TrellisErrorCode, tool?: string): ToolResult {
  if (TrellisError.is(error)) return { ok: false, error: error.toToolError() };
  const message = describeError(error);
  return errorResult(code, tool ? `${tool} failed: ${message}` : message, false);
}

/** Kept apart from `invokeTool`: its closure would otherwise give every call a context to capture. */
function invokeGuarded(tool: RegisteredTool, invocation: ToolInvocation, ctx: MemberContext): Promise<ToolResult> {
  return guarded(tool, ctx, () => tool.fn(invocation.args, ctx as never)).then(toolValue, failureOf(tool));
}

const failures = new WeakMap<RegisteredTool, (error: unknown) => ToolResult>();

/** A tool's rejection as an error result naming the tool; one handler per tool, not per call. */
function failureOf(tool: RegisteredTool): (error: unknown) => ToolResult {
  let failure = failures.get(tool);
  if (failure === undefined) {
    const name = tool.name;
    failure = (error) => fromError(error, 'ToolFailed', name);
    failures.set(tool, failure);
  }
  return failure;
}

/** A tool's return value as a result: `done(value)` ends the turn. */
function toolValue(out: unknown): ToolResult {
  if (isHookResult(out) && hookResultKind(out) === 'done')
    return { ok: true, value: (out as HookResult & { value: unknown }).value, done: true };
  return { ok: true, value: out };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}

/**
 * Runs the tool under its `timeoutMs` and the caller's signal. The call stops on either,
 * even if the tool ignores its signal; the tool's signal is in place before it runs.
 */
function guarded(tool: RegisteredTool, ctx: MemberContext, run: () => unknown): Promise<unknown> {
  const outer = ctx.signal;
  if (outer.aborted) return Promise.reject(cancelledCall(tool));
  const controller = tool.timeoutMs === undefined ? undefined : new AbortController();
  if (controller) setSignal(ctx, controller.signal);
  let stop!: (error: TrellisError) => void;
  const stopped = new Promise<never>((_, reject) => (stop = reject));
  // Settle first, then abort, so a tool that rejects on abort does not win the race.
  const onAbort = () => {
    stop(cancelledCall(tool));
    controller?.abort(outer.reason);
  };
  outer.addEventListener('abort', onAbort, { once: true });
  let timer: NodeJS.Timeout | undefined;
  if (controller) {
    timer = setTimeout(() => {
      stop(
        new TrellisError('ToolTimeout', `${tool.name} took longer than ${tool.timeoutMs} ms and was stopped`, {
          retryable: true,
          hint: 'Try again, or with a smaller request',
        }),
      );
      controller.abort();
    }, tool.timeoutMs);
  }
  let pending: Promise<unknown>;
  try {
    pending = Promise.resolve(run());
  } catch (error) {
    pending = Promise.reject(error);
  }
  // A late failure of an abandoned call must not surface as an unhandled rejection.
  pending.catch(() => undefined);
  return Promise.race([pending, stopped]).finally(() => {
    clearTimeout(timer);
    outer.removeEventListener('abort', onAbort);
  });
}

function cancelledCall(tool: RegisteredTool): TrellisError {
  return new TrellisError('Cancelled', `${tool.name} was stopped: the call was cancelled`, {
    hint: 'Send the message again to retry',
  });
}
