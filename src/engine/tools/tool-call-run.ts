// The module's binding, not the global: Node's `globalThis.performance` is a getter, run at every read.
import { performance } from 'node:perf_hooks';
import { ContextLevel, EMPTY_VALUES, type ContextSnapshot } from '../context/context-level.js';
import { bindCall, commandOf, type MemberContext } from '../context/member-context.js';
import { memberContext } from '../context/member-invoker.js';
import type { RolledUpUsage } from '../../contract/agent-usage.js';
import { DelegatedOutcome } from '../../contract/delegation.js';
import type { ToolCallInfo, ToolCallOutcome } from '../../contract/hook-payloads.js';
import { andThen, type MaybePromise } from '../../contract/maybe-promise.js';
import { interruptedTicket } from '../../contract/suspension.js';
import { errorResult, type ToolCallRecord, type ToolErrorInfo, type ToolResult } from '../../contract/tool-result.js';
import { isStop, type GateDecision, type HookOutcome } from '../hooks/hook-engine.js';
import type { ModelToolCall } from '../../contract/model-provider.js';
import { isToolContent } from '../../contract/content-part.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { maskFields, secretFields } from '../../redaction/redactor.js';
import type { Phase } from '../state/state-engine.js';
import type { StateCommand } from '../../contract/state-command.js';
import { MAX_ARGUMENT_CHARS } from '../validation/argument-limits.js';
import { formatFieldErrors, validateDto } from '../validation/validate-dto.js';
import { budgetError, type BudgetGuard } from '../budgets/budgets.js';
import type { CallEnd, CallResultEnd } from './call-end.js';
import { runChain } from './middleware-chain.js';
import { recordToolResult, toolMessage } from './tool-record.js';
import { fromError, invokeTool, toolFailure } from './tool-invoke.js';
import { capToolContent, capToolResult } from './result-cap.js';
import type { ToolInvocation, ToolNotice } from '../../contract/tool-middleware.js';
import type { CallPlace, TurnEnv } from './turn-env.js';

/**
 * Where a call stands after a stage: ended, waiting for a hook, or running its middleware
 * chain and tool (the run itself: the caller awaits its `running`, then hands the result
 * to `ran`).
 */
export type CallStep = CallEnd | ToolCallRun | Promise<CallEnd | ToolCallRun>;

/** Settled outcomes as the stages after the tool read them: a `ToolResult` or the hooks' `ToolCallOutcome`. */
type Settled = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly error: ToolErrorInfo };

const NO_TAGS: readonly string[] = [];

/**
 * One tool call, its stages named in the order they run:
 *
 * `start` (replay, `tool.started`) → `gate` (`tool.gate`, `agent.delegating`) → `beforeCall`
 * (`tool.before_call`) → `validate` (input, `@Requires`, the call's context) → `invoke` (the
 * lease check and the journal's start mark, then middleware and the tool) → `ran` (output
 * check, the tool's state command, a sub-agent's outcome) → `afterCall` (`tool.after_call` /
 * `tool.error`) → `record` (`<tool>.result`, `memory.write`, `tool.finished`) → `journal`
 * (the step journal, durable before the call counts as finished).
 *
 * A stage returns the next one's answer when its hooks answer synchronously (through
 * {@link andThen}), so a call whose hooks are absent or synchronous costs no promise until
 * its tool runs. Every failure becomes an error result the model sees; nothing here throws at
 * the turn except a failing hook or a lost lease.
 */
export class ToolCallRun implements CallPlace {
  readonly started = performance.now();
  readonly callId: string;
  /** The call as hooks see it; `tool.before_call` may replace it. */
  info: ToolCallInfo;
  /** The middleware chain and the tool, once `invoke` started them. */
  running!: Promise<ToolResult>;
  #ctx: MemberContext | undefined;
  #invocation: ToolInvocation | undefined;
  #outcome: Settled | undefined;
  #done = false;
  #usage: RolledUpUsage | undefined;

  constructor(
    readonly env: TurnEnv,
    readonly call: ModelToolCall,
    readonly round: number,
    /** The call's index among its round's calls; -1 for a call outside a model turn. */
    readonly position: number,
    readonly tool: RegisteredTool | undefined,
    /** A human approved the call: the gate is not asked again. */
    readonly approved: boolean,
  ) {
    this.callId = call.id;
    this.info = {
      callId: call.id,
      tool: call.name,
      plugin: tool?.plugin ?? '',
      tags: tool?.tags ?? NO_TAGS,
      args: parseLoose(call.arguments),
      round,
    };
  }

  /** The first stage: a call the step journal knows from before a crash ends here; any other is announced and gated. */
  start(tools: ReadonlyMap<string, RegisteredTool>): CallStep {
    const { env, tool, call } = this;
    if (tool !== undefined && env.steps !== undefined) {
      const replayed = env.steps.replayed(this);
      if (replayed?.kind === 'finished') return replayed.end;
      if (replayed?.kind === 'started' && tool.onCrash === 'ask' && !this.approved) return this.inDoubt();
    }
    if (env.observed())
      env.emit({
        type: 'tool.started',
        sessionId: env.sessionId,
        callId: call.id,
        tool: call.name,
        args: maskFields(this.info.args, secretFields(tool?.input)),
      });
    if (tool === undefined) {
      const known = [...tools.keys()].join(', ') || 'none';
      return this.afterCall(
        errorResult('ToolNotFound', `There is no tool '${call.name}' in this round. Call one of: ${known}`),
      );
    }
    return this.gate();
  }

  /**
   * The end of the middleware chain: the tool itself. (The chain's inner end is this object,
   * not a closure made per call.)
   */
  run(invocation: ToolInvocation): Promise<ToolResult> {
    return invokeTool(this.tool!, invocation, this.#ctx!);
  }

  /** After the chain settled: its output checked, its state command committed, a sub-agent's outcome unwrapped. */
  ran(result: ToolResult): MaybePromise<CallEnd> {
    const tool = this.tool!;
    if (result.ok && tool.output && !result.done) result = this.checkOutput(result.value);
    const command = result.ok ? commandOf(this.#ctx!) : undefined;
    if (command) return this.commit(result, command);
    return this.settled(result);
  }

  /** `tool.gate` (and `agent.delegating` for a delegation), unless a human approved the call already. */
  private gate(): CallStep {
    const { env, tool } = this;
    // Points without handlers are checked here by name, so the call does not go through the engine for them.
    if (this.approved || (env.site.hooks['tool.gate'].length === 0 && !tool!.delegation)) return this.beforeCall();
    const deciding = env.hooks.run('tool.gate', this.info, env.site);
    if (tool!.delegation) return this.delegating(deciding);
    return andThen(this, deciding, this.decided);
  }

  private async delegating(deciding: MaybePromise<GateDecision>): Promise<CallEnd | ToolCallRun> {
    let decision = await deciding;
    if (decision.kind === 'allow')
      decision = await this.env.hooks.run('agent.delegating', this.tool!.delegation!(this.info), this.env.site);
    return this.decided(decision);
  }

  private decided(decision: GateDecision): CallStep {
    const { env, call } = this;
    if (decision.kind === 'block') {
      const error: ToolErrorInfo = {
        code: 'Blocked',
        message: `Blocked by ${decision.by}: ${decision.reason}`,
        retryable: false,
      };
      if (env.observed())
        env.emit({
          type: 'tool.finished',
          sessionId: env.sessionId,
          callId: call.id,
          tool: call.name,
          ok: false,
          durationMs: performance.now() - this.started,
          error,
        });
      return { kind: 'blocked', reason: decision.reason, by: decision.by };
    }
    if (decision.kind === 'suspend') {
      if (env.observed())
        env.emit({
          type: 'tool.suspended',
          sessionId: env.sessionId,
          callId: call.id,
          tool: call.name,
          message: decision.ticket.message,
        });
      return {
        kind: 'suspended',
        pending: { callId: call.id, tool: call.name, arguments: call.arguments, ticket: decision.ticket },
      };
    }
    if (decision.kind === 'setResult') return this.afterCall({ ok: true, value: decision.value });
    return this.beforeCall();
  }

  private beforeCall(): CallStep {
    const { env } = this;
    if (env.site.hooks['tool.before_call'].length === 0) return this.validate(this.info);
    return andThen(this, env.hooks.run('tool.before_call', this.info, env.site), this.validate);
  }

  /** Input validation, `@Requires` resolution and the call's context; an error result when one fails. */
  private validate(before: HookOutcome<'tool.before_call'>): CallStep {
    const tool = this.tool!;
    if (isStop(before))
      return this.afterCall(
        errorResult('Blocked', `The call to ${tool.name} was blocked: ${before.reason}. Do not retry it unchanged`),
      );
    this.info = before;
    const { env } = this;
    // Unparsable arguments stay text, so the model is told they are not JSON.
    const input = tool.validateInput(before.args);
    if (!input.ok)
      return this.afterCall(
        errorResult(
          'ToolInput',
          `Invalid arguments for ${tool.name}:\n${formatFieldErrors(input.errors)}\nFix these fields and call the tool again`,
        ),
      );
    const scope = env.site.scope;
    // The call's execution level starts empty: the snapshot reads it as such.
    const snapshot: ContextSnapshot = {
      revision: scope.state.revision,
      session: scope.state.session.values,
      turn: scope.turn?.values,
      execution: EMPTY_VALUES,
    };
    let ctx: MemberContext;
    try {
      ctx = memberContext(tool, { scope, snapshot, schema: env.registry, point: 'tool.call', signal: env.site.signal });
    } catch (error) {
      return this.afterCall(fromError(error, 'MissingContext'));
    }
    bindCall(ctx, before.callId, tool.name, env.turnIndex, this.round, this.position);
    const notify = (notice: ToolNotice) => {
      if (env.observed()) env.emit({ ...notice, sessionId: env.sessionId, callId: before.callId, tool: tool.name });
    };
    this.#ctx = ctx;
    this.#invocation = {
      callId: before.callId,
      tool: tool.name,
      plugin: tool.plugin,
      args: input.value,
      context: ctx,
      signal: ctx.signal,
      attempt: 1,
      notify,
    };
    return this.invoke();
  }

  /** The journal's word first (lease still held; the start of a call that is not retried after a crash), then the chain. */
  private invoke(): ToolCallRun | Promise<ToolCallRun> {
    const steps = this.env.steps;
    const waiting = steps?.beforeInvoke(this, this.tool!.onCrash);
    if (waiting !== undefined) return waiting.then(() => this.startChain());
    return this.startChain();
  }

  private startChain(): ToolCallRun {
    const budgets = this.env.budgets;
    const plugin = this.tool!.plugin;
    if (budgets !== undefined && budgets.applies(plugin, this.env.registry.byName.get(plugin)?.definition.owner)) {
      this.running = this.budgeted(budgets);
      return this;
    }
    try {
      this.running = runChain(this.tool!.chain, this.#invocation!, this);
    } catch (error) {
      this.running = Promise.resolve(toolFailure(error));
    }
    return this;
  }

  /** The point of spend: the call is checked against its plugin's and owner's budgets, and runs only if none is spent. */
  private async budgeted(budgets: BudgetGuard): Promise<ToolResult> {
    const { env, tool } = this;
    const byName = env.registry.byName;
    const refusal = await budgets.admit(
      tool!.plugin,
      byName.get(tool!.plugin)?.definition.owner,
      env.site.spend,
      (plugin) => byName.get(plugin)?.definition.owner,
    );
    if (refusal !== undefined) {
      if (env.observed())
        env.emit({
          type: 'budget.exceeded',
          sessionId: env.sessionId,
          callId: this.call.id,
          tool: tool!.name,
          ...refusal,
        });
      return { ok: false, error: budgetError(refusal) };
    }
    try {
      return await runChain(tool!.chain, this.#invocation!, this);
    } catch (error) {
      return toolFailure(error);
    }
  }

  private async commit(result: ToolResult, command: StateCommand): Promise<CallEnd> {
    const { env, tool } = this;
    const phase: Phase = { point: `tool:${tool!.name}`, pending: undefined };
    // The execution level exists only for a call that wrote something.
    const target = { scope: env.site.scope.withExecution(new ContextLevel()), schema: env.registry };
    await env.state.submit(command, target, phase);
    await env.state.execute(phase, target);
    return this.settled(result);
  }

  /** A sub-agent's turn suspended (its waiting calls become this call's) or finished (its result and usage are the call's). */
  private settled(result: ToolResult): MaybePromise<CallEnd> {
    if (result.ok && result.value instanceof DelegatedOutcome) {
      const { suspended } = result.value;
      if (suspended) {
        const { env, call } = this;
        if (env.observed())
          env.emit({
            type: 'tool.suspended',
            sessionId: env.sessionId,
            callId: call.id,
            tool: call.name,
            message: `Waiting for ${suspended.pending.length} call(s) inside ${suspended.agent}`,
          });
        return {
          kind: 'suspended',
          pending: {
            callId: call.id,
            tool: call.name,
            arguments: call.arguments,
            ticket: { message: `Waiting inside ${suspended.agent}` },
          },
          child: suspended,
        };
      }
      this.#usage = result.value.usage;
      result = result.value.result!;
    }
    return this.afterCall(result);
  }

  /** `tool.after_call` or `tool.error` on the result; for every result, whoever made it (the tool, a gate, a failed check). */
  private afterCall(result: ToolResult): MaybePromise<CallEnd> {
    const { env, tool } = this;
    this.#done = result.ok && result.done === true;
    const hooks = env.site.hooks;
    // Most calls have no after_call, error or memory.write handler: then no payload is built and nothing awaits.
    // Constant keys: a key chosen by a ternary made this a generic keyed load.
    if (
      (tool === undefined || (result.ok ? hooks['tool.after_call'] : hooks['tool.error']).length === 0) &&
      hooks['memory.write'].length === 0
    ) {
      if (tool !== undefined) recordToolResult(env, this.info.callId, this.info.round, tool, result);
      return this.journal(this.finish(result));
    }
    const outcome: ToolCallOutcome = result.ok
      ? { kind: 'tool_result', call: this.info, ok: true, value: result.value }
      : { kind: 'tool_result', call: this.info, ok: false, error: result.error };
    if (tool === undefined) return this.record(outcome, false);
    return andThen(
      this,
      env.hooks.run(result.ok ? 'tool.after_call' : 'tool.error', outcome, env.site),
      this.recordOutcome,
    );
  }

  private recordOutcome(outcome: ToolCallOutcome): MaybePromise<CallEnd> {
    return this.record(outcome, true);
  }

  /** The result at turn level (`<tool>.result`, `trellis.last_tool_results`), then `memory.write`. */
  private record(outcome: ToolCallOutcome, atTurnLevel: boolean): MaybePromise<CallEnd> {
    const { env } = this;
    if (atTurnLevel) recordToolResult(env, this.info.callId, this.info.round, this.tool!, outcome);
    this.#outcome = outcome;
    return andThen(this, env.hooks.run('memory.write', outcome, env.site), this.written);
  }

  private written(): MaybePromise<CallEnd> {
    return this.journal(this.finish(this.#outcome!));
  }

  /** The call's record and what the model reads of it; `tool.finished`. */
  private finish(outcome: Settled): CallResultEnd {
    const { env, info } = this;
    const durationMs = performance.now() - this.started;
    const error: ToolErrorInfo | undefined = outcome.ok ? undefined : outcome.error;
    // A call of an owned plugin (`@Plugin({ owner })`) says whose it is, in its event and its record.
    const plugin = this.tool?.plugin;
    const owner = plugin === undefined ? undefined : env.registry.byName.get(plugin)?.definition.owner;
    // Per-turn budgets read the time as each call finishes, before its round's results are gathered.
    if (plugin !== undefined) env.site.spend.addTool(plugin, durationMs);
    if (env.observed())
      env.emit({
        type: 'tool.finished',
        sessionId: env.sessionId,
        callId: info.callId,
        tool: info.tool,
        ok: outcome.ok,
        durationMs,
        error,
        ...(owner !== undefined && { plugin, owner }),
      });
    let record: ToolCallRecord = outcome.ok
      ? { callId: info.callId, tool: info.tool, round: info.round, ok: true, value: outcome.value, durationMs }
      : { callId: info.callId, tool: info.tool, round: info.round, ok: false, error: outcome.error, durationMs };
    if (owner !== undefined) record = { ...record, plugin, owner };
    if (this.#usage) record = { ...record, usage: this.#usage };
    const limit = this.tool?.maxResultChars ?? env.maxToolResultChars;
    // Parts keep their bytes whole: only their text is capped (images and files have their own size limits).
    const content =
      outcome.ok && isToolContent(outcome.value)
        ? capToolContent(outcome.value, limit)
        : capToolResult(toolMessage(outcome), limit);
    return { kind: 'result', record, content, done: this.#done };
  }

  /** The last stage: the finished call in the step journal, durable before the turn goes on. */
  private journal(end: CallResultEnd): MaybePromise<CallEnd> {
    const steps = this.env.steps;
    if (steps === undefined || this.position < 0) return end;
    return steps.finished(this, end).then(() => end);
  }

  /** A call the journal says started before a crash and left no result, whose tool asks a human. */
  private inDoubt(): CallEnd {
    const { env, call } = this;
    const ticket = interruptedTicket(call.name, false);
    if (env.observed())
      env.emit({
        type: 'tool.suspended',
        sessionId: env.sessionId,
        callId: call.id,
        tool: call.name,
        message: ticket.message,
      });
    return { kind: 'suspended', pending: { callId: call.id, tool: call.name, arguments: call.arguments, ticket } };
  }

  private checkOutput(value: unknown): ToolResult {
    const { env, tool, info } = this;
    const checked = validateDto(tool!.output!, value, { forbidUnknown: false });
    if (checked.ok) return { ok: true, value };
    const message = `${tool!.name} returned a result that does not match its output DTO:\n${formatFieldErrors(checked.errors)}`;
    if (env.observed())
      env.emit({
        type: 'tool.output_invalid',
        sessionId: env.sessionId,
        callId: info.callId,
        tool: tool!.name,
        plugin: tool!.plugin,
        message,
      });
    return errorResult('ToolOutput', `${message}\nThis is a bug in the '${tool!.plugin}' plugin; try another approach`);
  }
}

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
