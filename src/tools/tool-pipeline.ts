import { describeError } from '../errors/describe-error.js';
import { ContextLevel } from '../context/context-level.js';
import { bindCall, commandOf, setSignal, type MemberContext } from '../context/member-context.js';
import { memberContext } from '../context/member-invoker.js';
import type { RolledUpUsage } from '../contract/agent-usage.js';
import { DelegatedOutcome, type ChildSuspension } from '../contract/delegation.js';
import type { ToolCallInfo, ToolCallOutcome } from '../contract/hook-payloads.js';
import { errorResult, type ToolCallRecord, type ToolErrorInfo, type ToolResult } from '../contract/tool-result.js';
import { TrellisError, type TrellisErrorCode } from '../errors/trellis-error.js';
import { isStop } from '../hooks/hook-engine.js';
import { hookResultKind, isHookResult, type HookResult } from '../hooks/hook-results.js';
import type { ModelToolCall } from '../models/model-provider.js';
import type { RegisteredTool } from '../plugin/plugin-member.js';
import { KERNEL_KEYS } from '../state/kernel-keys.js';
import { commitKernelWrites, turnUpdate, turnValue } from '../state/kernel-writes.js';
import type { Phase } from '../state/state-engine.js';
import { MAX_ARGUMENT_CHARS } from '../validation/argument-limits.js';
import { formatFieldErrors, validateDto } from '../validation/validate-dto.js';
import type { PendingApproval } from '../contract/suspension.js';
import type { TurnEnv } from './turn-env.js';
import { NEVER_ABORTED } from '../context/never-signal.js';
import { maskFields, secretFields } from '../redaction/redactor.js';
import { runChain } from './middleware-chain.js';
import { capToolResult } from './result-cap.js';
import type { ToolInvocation, ToolNotice } from './tool-middleware.js';

/** How one call ended, for the turn loop (internal: the public record is `ToolCallRecord`). */
export type CallEnd =
  | { readonly kind: 'result'; readonly record: ToolCallRecord; readonly content: string; readonly done: boolean }
  | { readonly kind: 'blocked'; readonly reason: string; readonly by: string }
  | { readonly kind: 'suspended'; readonly pending: PendingApproval; readonly child?: ChildSuspension };

export interface CallOptions {
  /** A human approved the call: the gate is not asked again. */
  readonly approved?: boolean;
}

/**
 * One tool call, DESIGN §7.3: gate → before_call → input validation → @Requires →
 * middleware → tool → after_call | error → result recorded → memory.write. Every
 * failure becomes an error result the model sees; nothing here throws at the turn
 * except a failing hook.
 */
export async function executeToolCall(env: TurnEnv, call: ModelToolCall, round: number, tools: ReadonlyMap<string, RegisteredTool>, options: CallOptions = {}): Promise<CallEnd> {
  const started = performance.now();
  const tool = tools.get(call.name);
  const info: ToolCallInfo = { callId: call.id, tool: call.name, plugin: tool?.plugin ?? '', tags: tool?.tags ?? NO_TAGS, args: parseLoose(call.arguments), round };
  if (env.observed()) env.emit({ type: 'tool.started', sessionId: env.sessionId, callId: call.id, tool: call.name, args: maskFields(info.args, secretFields(tool?.input)) });
  if (!tool) {
    const known = [...tools.keys()].join(', ') || 'none';
    return finish(env, info, undefined, errorResult('ToolNotFound', `There is no tool '${call.name}' in this round. Call one of: ${known}`), started);
  }
  if (!options.approved) {
    const deciding = env.hooks.run('tool.gate', info, env.site);
    let decision = deciding instanceof Promise ? await deciding : deciding;
    if (decision.kind === 'allow' && tool.delegation) decision = await env.hooks.run('agent.delegating', tool.delegation(info), env.site);
    if (decision.kind === 'block') {
      const error: ToolErrorInfo = { code: 'Blocked', message: `Blocked by ${decision.by}: ${decision.reason}`, retryable: false };
      if (env.observed()) env.emit({ type: 'tool.finished', sessionId: env.sessionId, callId: call.id, tool: call.name, ok: false, durationMs: performance.now() - started, error });
      return { kind: 'blocked', reason: decision.reason, by: decision.by };
    }
    if (decision.kind === 'suspend') {
      if (env.observed()) env.emit({ type: 'tool.suspended', sessionId: env.sessionId, callId: call.id, tool: call.name, message: decision.ticket.message });
      return { kind: 'suspended', pending: { callId: call.id, tool: call.name, arguments: call.arguments, ticket: decision.ticket } };
    }
    if (decision.kind === 'setResult') return finish(env, info, tool, { ok: true, value: decision.value }, started);
  }
  const beforeCall = env.hooks.run('tool.before_call', info, env.site);
  const before = beforeCall instanceof Promise ? await beforeCall : beforeCall;
  if (isStop(before)) {
    return finish(env, info, tool, errorResult('Blocked', `The call to ${tool.name} was blocked: ${before.reason}. Do not retry it unchanged`), started);
  }
  let result = await runTool(env, tool, before);
  let usage: RolledUpUsage | undefined;
  if (result.ok && result.value instanceof DelegatedOutcome) {
    // A sub-agent's turn: it suspended (its waiting calls become this call's), or it finished.
    const { suspended } = result.value;
    if (suspended) {
      if (env.observed()) env.emit({ type: 'tool.suspended', sessionId: env.sessionId, callId: call.id, tool: call.name, message: `Waiting for ${suspended.pending.length} call(s) inside ${suspended.agent}` });
      return { kind: 'suspended', pending: { callId: call.id, tool: call.name, arguments: call.arguments, ticket: { message: `Waiting inside ${suspended.agent}` } }, child: suspended };
    }
    usage = result.value.usage;
    result = result.value.result!;
  }
  return finish(env, before, tool, result, started, usage);
}

async function runTool(env: TurnEnv, tool: RegisteredTool, info: ToolCallInfo): Promise<ToolResult> {
  // Unparsable arguments stay text, so the model is told they are not JSON.
  const input = tool.validateInput(info.args);
  if (!input.ok) {
    return errorResult('ToolInput', `Invalid arguments for ${tool.name}:\n${formatFieldErrors(input.errors)}\nFix these fields and call the tool again`);
  }
  const scope = env.site.scope.withExecution(new ContextLevel());
  const snapshot = scope.snapshot();
  let ctx: MemberContext;
  try {
    ctx = memberContext(tool, { scope, snapshot, schema: env.registry, point: 'tool.call', signal: env.site.signal });
  } catch (error) {
    return fromError(error, 'MissingContext');
  }
  bindCall(ctx, { callId: info.callId, tool: tool.name, turnIndex: env.turnIndex, idempotencyKey: idempotencyKey(env, info) });
  const notify = (notice: ToolNotice) => {
    if (env.observed()) env.emit({ ...notice, sessionId: env.sessionId, callId: info.callId, tool: tool.name });
  };
  const invocation: ToolInvocation = { callId: info.callId, tool: tool.name, plugin: tool.plugin, args: input.value, context: ctx, signal: ctx.signal, attempt: 1, notify };
  let result: ToolResult;
  try {
    result = await runChain(tool.chain, invocation, (inv) => invoke(tool, inv, ctx));
  } catch (error) {
    result = fromError(error, 'ToolFailed');
  }
  if (result.ok && tool.output && !result.done) result = checkOutput(env, tool, info, result.value);
  const command = result.ok ? commandOf(ctx) : undefined;
  if (command) {
    const phase: Phase = { point: `tool:${tool.name}`, pending: undefined };
    const target = { scope, schema: env.registry };
    await env.state.submit(command, target, phase);
    await env.state.execute(phase, target);
  }
  return result;
}

async function invoke(tool: RegisteredTool, invocation: ToolInvocation, ctx: MemberContext): Promise<ToolResult> {
  setSignal(ctx, invocation.signal);
  try {
    const out = await guarded(tool, ctx, () => tool.fn(invocation.args, ctx as never));
    if (isHookResult(out) && hookResultKind(out) === 'done') return { ok: true, value: (out as HookResult & { value: unknown }).value, done: true };
    return { ok: true, value: out };
  } catch (error) {
    return fromError(error, 'ToolFailed', tool.name);
  }
}

/**
 * Runs the tool under its `timeoutMs` and the caller's signal. The call stops on either,
 * even if the tool ignores its signal; the tool's signal is in place before it runs.
 */
function guarded(tool: RegisteredTool, ctx: MemberContext, run: () => unknown): Promise<unknown> {
  const outer = ctx.signal;
  if (outer.aborted) return Promise.reject(cancelledCall(tool));
  // Nothing can stop this call: no listener, no race (they cost ~10 % of a round).
  if (tool.timeoutMs === undefined && outer === NEVER_ABORTED) {
    try {
      return Promise.resolve(run());
    } catch (error) {
      return Promise.reject(error);
    }
  }
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
      stop(new TrellisError('ToolTimeout', `${tool.name} took longer than ${tool.timeoutMs} ms and was stopped`, { retryable: true, hint: 'Try again, or with a smaller request' }));
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
  return new TrellisError('Cancelled', `${tool.name} was stopped: the call was cancelled`, { hint: 'Send the message again to retry' });
}

function checkOutput(env: TurnEnv, tool: RegisteredTool, info: ToolCallInfo, value: unknown): ToolResult {
  const checked = validateDto(tool.output!, value, { forbidUnknown: false });
  if (checked.ok) return { ok: true, value };
  const message = `${tool.name} returned a result that does not match its output DTO:\n${formatFieldErrors(checked.errors)}`;
  if (env.observed()) env.emit({ type: 'tool.output_invalid', sessionId: env.sessionId, callId: info.callId, tool: tool.name, plugin: tool.plugin, message });
  return errorResult('ToolOutput', `${message}\nThis is a bug in the '${tool.plugin}' plugin; try another approach`);
}

async function finish(env: TurnEnv, info: ToolCallInfo, tool: RegisteredTool | undefined, result: ToolResult, started: number, usage?: RolledUpUsage): Promise<CallEnd> {
  let outcome: ToolCallOutcome = result.ok
    ? { kind: 'tool_result', call: info, ok: true, value: result.value }
    : { kind: 'tool_result', call: info, ok: false, error: result.error };
  if (tool) {
    const after = env.hooks.run(result.ok ? 'tool.after_call' : 'tool.error', outcome, env.site);
    outcome = after instanceof Promise ? await after : after;
    const record = outcome.ok ? outcome.value : { error: outcome.error };
    commitKernelWrites(env.site.scope, env.registry, [
      turnValue(`${tool.name}.result`, record),
      // The results of the latest round only: keeping the whole turn made every call copy a growing list.
      turnUpdate(KERNEL_KEYS.lastToolResults, (list) => [
        ...((list as { round: number }[] | undefined) ?? []).filter((entry) => entry.round === info.round),
        { callId: info.callId, tool: tool.name, ok: outcome.ok, result: record, round: info.round },
      ]),
    ]);
  }
  const writing = env.hooks.run('memory.write', outcome, env.site);
  if (writing instanceof Promise) await writing;
  const durationMs = performance.now() - started;
  const error: ToolErrorInfo | undefined = outcome.ok ? undefined : outcome.error;
  if (env.observed()) env.emit({ type: 'tool.finished', sessionId: env.sessionId, callId: info.callId, tool: info.tool, ok: outcome.ok, durationMs, error });
  let record: ToolCallRecord = outcome.ok
    ? { callId: info.callId, tool: info.tool, round: info.round, ok: true, value: outcome.value, durationMs }
    : { callId: info.callId, tool: info.tool, round: info.round, ok: false, error: outcome.error, durationMs };
  if (usage) record = { ...record, usage };
  return { kind: 'result', record, content: capToolResult(toolMessage(outcome), tool?.maxResultChars ?? env.maxToolResultChars), done: result.ok && result.done === true };
}

/** The tool message the model reads. */
export function toolMessage(outcome: { ok: boolean; value?: unknown; error?: ToolErrorInfo }): string {
  if (!outcome.ok) return JSON.stringify({ error: outcome.error });
  return typeof outcome.value === 'string' ? outcome.value : JSON.stringify(outcome.value ?? null);
}

const NO_TAGS: readonly string[] = [];

/** The model's arguments as JSON, or the text itself when it does not parse. */
function parseLoose(text: string): unknown {
  // Oversized text stays text: validateJson refuses it without parsing.
  if (text.length > MAX_ARGUMENT_CHARS) return text;
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/**
 * Stable for one call of one turn of one session, across retries and processes: tools
 * with side effects use it to make them happen once.
 */
function idempotencyKey(env: TurnEnv, info: ToolCallInfo): string {
  return `${env.sessionId}:${env.turnIndex}:${info.callId}`;
}

function fromError(error: unknown, code: TrellisErrorCode, tool?: string): ToolResult {
  if (TrellisError.is(error)) return { ok: false, error: error.toToolError() };
  const message = describeError(error);
  return errorResult(code, tool ? `${tool} failed: ${message}` : message, false);
}
