// The module's binding, not the global: Node's `globalThis.performance` is a getter, run at every read.
import { performance } from 'node:perf_hooks';
import { describeError } from '../errors/describe-error.js';
import { ContextLevel } from '../context/context-level.js';
import { EMPTY_VALUES, type ContextSnapshot } from '../context/context-level.js';
import { bindCall, commandOf, setSignal, type MemberContext } from '../context/member-context.js';
import { memberContext } from '../context/member-invoker.js';
import type { RolledUpUsage } from '../contract/agent-usage.js';
import { DelegatedOutcome, type ChildSuspension } from '../contract/delegation.js';
import type { ToolCallInfo, ToolCallOutcome } from '../contract/hook-payloads.js';
import { errorResult, type ToolCallRecord, type ToolErrorInfo, type ToolResult } from '../contract/tool-result.js';
import { TrellisError, type TrellisErrorCode } from '../errors/trellis-error.js';
import { isStop, type GateDecision, type HookOutcome } from '../hooks/hook-engine.js';
import { hookResultKind, isHookResult, type HookResult } from '../hooks/hook-results.js';
import type { ModelToolCall } from '../models/model-provider.js';
import type { RegisteredTool } from '../plugin/plugin-member.js';
import { KERNEL_KEYS } from '../state/kernel-keys.js';
import { commitTurnValues } from '../state/kernel-writes.js';
import type { Phase } from '../state/state-engine.js';
import type { StateCommand } from '../state/state-command.js';
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
 * Where a call stands after {@link startToolCall}: ended, waiting for a hook, or running
 * its middleware chain and tool (a {@link PreparedCall} whose `running` the caller awaits,
 * then hands to `ran`).
 */
export type CallStep = CallEnd | PreparedCall | Promise<CallEnd | PreparedCall>;

/**
 * One tool call, DESIGN §7.3: gate → before_call → input validation → @Requires →
 * middleware → tool → after_call | error → result recorded → memory.write. Every
 * failure becomes an error result the model sees; nothing here throws at the turn
 * except a failing hook.
 */
export function executeToolCall(env: TurnEnv, call: ModelToolCall, round: number, tools: ReadonlyMap<string, RegisteredTool>, options?: CallOptions): Promise<CallEnd> {
  let step: CallStep;
  try {
    step = startToolCall(env, call, round, tools, options);
  } catch (error) {
    return Promise.reject(error);
  }
  if (step instanceof PreparedCall) return afterRunning(step);
  if (step instanceof Promise) return step.then((reached) => (reached instanceof PreparedCall ? afterRunning(reached) : reached));
  return Promise.resolve(step);
}

function afterRunning(prepared: PreparedCall): Promise<CallEnd> {
  return prepared.running.then(
    (result) => prepared.ran(result),
    (error: unknown) => prepared.ran(toolFailure(error)),
  );
}

/**
 * {@link executeToolCall} as steps that continue synchronously while nothing is pending,
 * for the turn loop: it awaits the chain itself (`step.running`, then `step.ran`), so no
 * promise or closure is made per call to continue after the tool, and no suspended frame
 * of the pipeline is held while the tool runs. A step whose hooks are absent or
 * synchronous costs no promise.
 */
export function startToolCall(env: TurnEnv, call: ModelToolCall, round: number, tools: ReadonlyMap<string, RegisteredTool>, options?: CallOptions): CallStep {
  const started = performance.now();
  const tool = tools.get(call.name);
  const info: ToolCallInfo = { callId: call.id, tool: call.name, plugin: tool?.plugin ?? '', tags: tool?.tags ?? NO_TAGS, args: parseLoose(call.arguments), round };
  if (env.observed()) env.emit({ type: 'tool.started', sessionId: env.sessionId, callId: call.id, tool: call.name, args: maskFields(info.args, secretFields(tool?.input)) });
  if (!tool) {
    const known = [...tools.keys()].join(', ') || 'none';
    return finish(env, info, undefined, errorResult('ToolNotFound', `There is no tool '${call.name}' in this round. Call one of: ${known}`), started);
  }
  if (options?.approved) return beforeCall(env, call, info, tool, started);
  // Points without handlers are checked here by name, so the call does not go through the engine for them.
  if (env.site.hooks['tool.gate'].length === 0 && !tool.delegation) return beforeCall(env, call, info, tool, started);
  const deciding = env.hooks.run('tool.gate', info, env.site);
  if (deciding instanceof Promise || tool.delegation) return gatedAsync(env, call, info, tool, started, deciding);
  return decided(env, call, info, tool, started, deciding);
}

/** A middleware chain's or tool's rejection as the call's error result. */
export function toolFailure(error: unknown): ToolResult {
  return fromError(error, 'ToolFailed');
}

/** The gate's decision when it, or `agent.delegating`, awaits. */
async function gatedAsync(env: TurnEnv, call: ModelToolCall, info: ToolCallInfo, tool: RegisteredTool, started: number, deciding: GateDecision | Promise<GateDecision>): Promise<CallEnd | PreparedCall> {
  let decision = await deciding;
  if (decision.kind === 'allow' && tool.delegation) decision = await env.hooks.run('agent.delegating', tool.delegation(info), env.site);
  return decided(env, call, info, tool, started, decision);
}

function decided(env: TurnEnv, call: ModelToolCall, info: ToolCallInfo, tool: RegisteredTool, started: number, decision: GateDecision): CallStep {
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
  return beforeCall(env, call, info, tool, started);
}

function beforeCall(env: TurnEnv, call: ModelToolCall, info: ToolCallInfo, tool: RegisteredTool, started: number): CallStep {
  if (env.site.hooks['tool.before_call'].length === 0) return runCall(env, call, info, tool, info, started);
  const beforeCall = env.hooks.run('tool.before_call', info, env.site);
  if (beforeCall instanceof Promise) return beforeCall.then((before) => runCall(env, call, info, tool, before, started));
  return runCall(env, call, info, tool, beforeCall, started);
}

/** Validation, context, then the middleware chain and the tool, running: the caller continues with `ran` when they settle. */
function runCall(env: TurnEnv, call: ModelToolCall, info: ToolCallInfo, tool: RegisteredTool, before: HookOutcome<'tool.before_call'>, started: number): CallEnd | PreparedCall | Promise<CallEnd> {
  if (isStop(before)) {
    return finish(env, info, tool, errorResult('Blocked', `The call to ${tool.name} was blocked: ${before.reason}. Do not retry it unchanged`), started);
  }
  const prepared = prepareCall(env, call, tool, before, started);
  if (!(prepared instanceof PreparedCall)) return finish(env, before, tool, prepared, started);
  try {
    prepared.running = runChain(tool.chain, prepared.invocation, prepared);
  } catch (error) {
    prepared.running = Promise.resolve(toolFailure(error));
  }
  return prepared;
}

async function committed(prepared: PreparedCall, result: ToolResult, command: StateCommand): Promise<CallEnd> {
  const { env, tool } = prepared;
  const phase: Phase = { point: `tool:${tool.name}`, pending: undefined };
  // The execution level exists only for a call that wrote something.
  const target = { scope: env.site.scope.withExecution(new ContextLevel()), schema: env.registry };
  await env.state.submit(command, target, phase);
  await env.state.execute(phase, target);
  return delegatedOrFinished(env, prepared.call, prepared.info, tool, result, prepared.started);
}

function delegatedOrFinished(env: TurnEnv, call: ModelToolCall, info: ToolCallInfo, tool: RegisteredTool, result: ToolResult, started: number): CallEnd | Promise<CallEnd> {
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
  return finish(env, info, tool, result, started, usage);
}

/**
 * A call running through its middleware: its context, invocation and what the steps after
 * it need. Whoever holds it awaits `running` (a rejection is {@link toolFailure}), then
 * continues with `ran`.
 */
export class PreparedCall {
  /** The middleware chain and the tool, set once they started. */
  running!: Promise<ToolResult>;

  constructor(
    readonly env: TurnEnv,
    readonly call: ModelToolCall,
    readonly tool: RegisteredTool,
    readonly info: ToolCallInfo,
    readonly started: number,
    readonly ctx: MemberContext,
    readonly invocation: ToolInvocation,
  ) {}

  /** The end of the middleware chain: the tool itself. */
  run(invocation: ToolInvocation): Promise<ToolResult> {
    return invoke(this.tool, invocation, this.ctx);
  }

  /** After the chain settled: its output checked, its state command committed, its result recorded. */
  ran(result: ToolResult): CallEnd | Promise<CallEnd> {
    const { env, tool, info, started } = this;
    if (result.ok && tool.output && !result.done) result = checkOutput(env, tool, info, result.value);
    const command = result.ok ? commandOf(this.ctx) : undefined;
    if (command) return committed(this, result, command);
    return delegatedOrFinished(env, this.call, info, tool, result, started);
  }
}

/** Input validation, `@Requires` resolution and the call's context; an error result when one fails. */
function prepareCall(env: TurnEnv, call: ModelToolCall, tool: RegisteredTool, info: ToolCallInfo, started: number): PreparedCall | ToolResult {
  // Unparsable arguments stay text, so the model is told they are not JSON.
  const input = tool.validateInput(info.args);
  if (!input.ok) {
    return errorResult('ToolInput', `Invalid arguments for ${tool.name}:\n${formatFieldErrors(input.errors)}\nFix these fields and call the tool again`);
  }
  const scope = env.site.scope;
  // The call's execution level starts empty: the snapshot reads it as such.
  const snapshot: ContextSnapshot = { revision: scope.state.revision, session: scope.state.session.values, turn: scope.turn?.values, execution: EMPTY_VALUES };
  let ctx: MemberContext;
  try {
    ctx = memberContext(tool, { scope, snapshot, schema: env.registry, point: 'tool.call', signal: env.site.signal });
  } catch (error) {
    return fromError(error, 'MissingContext');
  }
  bindCall(ctx, info.callId, tool.name, env.turnIndex);
  const notify = (notice: ToolNotice) => {
    if (env.observed()) env.emit({ ...notice, sessionId: env.sessionId, callId: info.callId, tool: tool.name });
  };
  const invocation: ToolInvocation = { callId: info.callId, tool: tool.name, plugin: tool.plugin, args: input.value, context: ctx, signal: ctx.signal, attempt: 1, notify };
  return new PreparedCall(env, call, tool, info, started, ctx, invocation);
}

function invoke(tool: RegisteredTool, invocation: ToolInvocation, ctx: MemberContext): Promise<ToolResult> {
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

/** Kept apart from `invoke`: its closure would otherwise give every call a context to capture. */
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
  if (isHookResult(out) && hookResultKind(out) === 'done') return { ok: true, value: (out as HookResult & { value: unknown }).value, done: true };
  return { ok: true, value: out };
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
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

function finish(env: TurnEnv, info: ToolCallInfo, tool: RegisteredTool | undefined, result: ToolResult, started: number, usage?: RolledUpUsage): CallEnd | Promise<CallEnd> {
  const done = result.ok && result.done === true;
  const hooks = env.site.hooks;
  // Most calls have no after_call, error or memory.write handler: then no payload is built and nothing awaits.
  // Constant keys: a key chosen by a ternary made this a generic keyed load.
  if ((tool === undefined || (result.ok ? hooks['tool.after_call'] : hooks['tool.error']).length === 0) && hooks['memory.write'].length === 0) {
    if (tool) record(env, info, tool, result);
    return callEnd(env, info, result, tool, started, done, usage);
  }
  const outcome: ToolCallOutcome = result.ok
    ? { kind: 'tool_result', call: info, ok: true, value: result.value }
    : { kind: 'tool_result', call: info, ok: false, error: result.error };
  if (tool) {
    const after = env.hooks.run(result.ok ? 'tool.after_call' : 'tool.error', outcome, env.site);
    if (after instanceof Promise) return after.then((changed) => recorded(env, info, tool, changed, started, done, usage));
    return recorded(env, info, tool, after, started, done, usage);
  }
  return written(env, info, outcome, undefined, started, done, usage);
}

/** How a call came out, as the steps after the hooks read it: a `ToolResult` or the hooks' `ToolCallOutcome`. */
type Settled = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: ToolErrorInfo };

function recorded(env: TurnEnv, info: ToolCallInfo, tool: RegisteredTool, outcome: ToolCallOutcome, started: number, done: boolean, usage: RolledUpUsage | undefined): CallEnd | Promise<CallEnd> {
  record(env, info, tool, outcome);
  return written(env, info, outcome, tool, started, done, usage);
}

/** The result recorded at turn level (`<tool>.result`, `trellis.last_tool_results`) in one commit. */
function record(env: TurnEnv, info: ToolCallInfo, tool: RegisteredTool, outcome: Settled): void {
  const value = outcome.ok ? outcome.value : { error: outcome.error };
  const round = info.round;
  // The results of the latest round only: keeping the whole turn made every call copy a growing list.
  // Read and written in one synchronous step, so no other call's commit can come between.
  const previous = env.site.scope.turn?.values[KERNEL_KEYS.lastToolResults] as { round: number }[] | undefined;
  const entry = { callId: info.callId, tool: tool.name, ok: outcome.ok, result: value, round };
  // The first result of a round (the common case) starts a list of its final length: the list
  // stays in the turn's context until the next round, and `[]` grown by `push` keeps room for 17.
  let latest: unknown[] | undefined;
  if (previous) {
    for (const earlier of previous) {
      if (earlier.round !== round) continue;
      if (latest) latest.push(earlier);
      else latest = [earlier];
    }
  }
  if (latest) latest.push(entry);
  else latest = [entry];
  commitTurnValues(env.site.scope, env.registry, recordKeys(tool), value, latest);
}

function written(env: TurnEnv, info: ToolCallInfo, outcome: ToolCallOutcome, tool: RegisteredTool | undefined, started: number, done: boolean, usage: RolledUpUsage | undefined): CallEnd | Promise<CallEnd> {
  const writing = env.hooks.run('memory.write', outcome, env.site);
  if (writing instanceof Promise) return writing.then(() => callEnd(env, info, outcome, tool, started, done, usage));
  return callEnd(env, info, outcome, tool, started, done, usage);
}

function callEnd(env: TurnEnv, info: ToolCallInfo, outcome: Settled, tool: RegisteredTool | undefined, started: number, done: boolean, usage: RolledUpUsage | undefined): CallEnd {
  const durationMs = performance.now() - started;
  const error: ToolErrorInfo | undefined = outcome.ok ? undefined : outcome.error;
  if (env.observed()) env.emit({ type: 'tool.finished', sessionId: env.sessionId, callId: info.callId, tool: info.tool, ok: outcome.ok, durationMs, error });
  let record: ToolCallRecord = outcome.ok
    ? { callId: info.callId, tool: info.tool, round: info.round, ok: true, value: outcome.value, durationMs }
    : { callId: info.callId, tool: info.tool, round: info.round, ok: false, error: outcome.error, durationMs };
  if (usage) record = { ...record, usage };
  return { kind: 'result', record, content: capToolResult(toolMessage(outcome), tool?.maxResultChars ?? env.maxToolResultChars), done };
}

const recordKeyPairs = new WeakMap<RegisteredTool, readonly [string, string]>();

/**
 * The turn-level keys a call's result is recorded under: `<tool name>.result` (where another
 * plugin may `@Requires` a tool's latest result) and `trellis.last_tool_results`; built once per tool.
 */
function recordKeys(tool: RegisteredTool): readonly [string, string] {
  let keys = recordKeyPairs.get(tool);
  if (keys === undefined) {
    keys = Object.freeze([`${tool.name}.result`, KERNEL_KEYS.lastToolResults] as const);
    recordKeyPairs.set(tool, keys);
  }
  return keys;
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
  // Text that opens with '{' is not blank: skip trim(), which copies the arguments.
  if (text.charCodeAt(0) !== 123 && text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function fromError(error: unknown, code: TrellisErrorCode, tool?: string): ToolResult {
  if (TrellisError.is(error)) return { ok: false, error: error.toToolError() };
  const message = describeError(error);
  return errorResult(code, tool ? `${tool} failed: ${message}` : message, false);
}
