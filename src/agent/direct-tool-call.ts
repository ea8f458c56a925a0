import { randomUUID } from 'node:crypto';
import { ContextLevel } from '../engine/context/context-level.js';
import type { ToolErrorInfo } from '../contract/tool-result.js';
import { KERNEL_KEYS } from '../contract/kernel-keys.js';
import { executeToolCall } from '../engine/tools/tool-pipeline.js';
import { checkArgumentShape, checkArgumentSize } from '../engine/validation/argument-limits.js';
import { formatFieldErrors } from '../engine/validation/validate-dto.js';
import { turnEnv, type SessionParts } from './turn/turn-envelope.js';
import type { PendingApproval } from './turn/turn-result.js';

/** Options of `session.callTool(name, args, options)`. */
export interface DirectCallOptions {
  /** Aborting it stops the call (its middleware and the tool see the signal). */
  readonly signal?: AbortSignal;
  /** Turn-level host context (`app.*` keys) for this call, e.g. the caller's scopes. */
  readonly context?: Readonly<Record<string, unknown>>;
  /**
   * The host asked a human about this very call (an MCP client's elicitation) and got an
   * approval: `tool.gate` is not asked again. Everything after it runs as usual.
   */
  readonly approved?: boolean;
}

/**
 * How a direct tool call ended. `ok`/`error` are the tool's result as a model would see it
 * (a bad argument is an `error` with code `ToolInput`); `blocked` and `suspended` are a
 * `tool.gate` decision: a suspended call did not run and is not kept for a later resume.
 */
export type DirectCallResult =
  | { readonly status: 'ok'; readonly callId: string; readonly value: unknown }
  | { readonly status: 'error'; readonly callId: string; readonly error: ToolErrorInfo }
  | { readonly status: 'blocked'; readonly callId: string; readonly reason: string; readonly by: string }
  | { readonly status: 'suspended'; readonly callId: string; readonly pending: PendingApproval };

/**
 * Runs one tool call through the tool pipeline outside a model turn — `tool.gate`,
 * `tool.before_call`, input validation, `@Requires`, middleware, the tool, `tool.after_call`
 * or `tool.error`, `memory.write`, events — for a host that calls tools itself (an MCP
 * server). Only the tools active for the session's agent can be called.
 */
export async function callToolDirectly(
  parts: SessionParts,
  name: string,
  args: unknown,
  options: DirectCallOptions = {},
): Promise<DirectCallResult> {
  const turnIndex = parts.sync.turns;
  const env = turnEnv(
    parts,
    new ContextLevel({ ...options.context, [KERNEL_KEYS.turnIndex]: turnIndex }),
    options.signal,
    turnIndex,
  );
  const callId = `direct_${randomUUID()}`;
  // A value too large or too deep to turn into text (JSON.stringify recurses) is refused as its text would be.
  const problems = typeof args === 'string' ? '' : valueProblems(args);
  if (problems.length > 0)
    return {
      status: 'error',
      callId,
      error: { code: 'ToolInput', message: `Invalid arguments for ${name}:\n${problems}`, retryable: false },
    };
  const text = typeof args === 'string' ? args : JSON.stringify(args ?? {});
  const outcome = await executeToolCall(
    env,
    { id: callId, name, arguments: text },
    0,
    -1,
    env.view.toolsByName,
    options.approved === true ? { approved: true } : undefined,
  );
  switch (outcome.kind) {
    case 'blocked':
      return { status: 'blocked', callId, reason: outcome.reason, by: outcome.by };
    case 'suspended':
      return { status: 'suspended', callId, pending: outcome.pending };
    case 'result': {
      const { record } = outcome;
      return record.ok
        ? { status: 'ok', callId, value: record.value }
        : { status: 'error', callId, error: record.error };
    }
  }
}

/** What the argument limits say about arguments given as a value, formatted; empty when they fit. */
function valueProblems(args: unknown): string {
  const tooBig = checkArgumentSize(args);
  const errors = tooBig ? [tooBig] : checkArgumentShape(args);
  return errors.length === 0 ? '' : formatFieldErrors(errors);
}
