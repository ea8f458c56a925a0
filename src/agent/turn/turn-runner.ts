// The module's binding, not the global: Node's `globalThis.performance` is a getter, run at every read.
import { performance } from 'node:perf_hooks';
import { describeError } from '../../errors/describe-error.js';
import { DeltaRedactor } from '../../engine/models/delta-redactor.js';
import { secretFields } from '../../redaction/redactor.js';
import { callMember, type MemberSite } from '../../engine/context/member-invoker.js';
import type { ToolCandidate } from '../../contract/hook-payloads.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { ChatMessage, ModelProvider, ModelResponse, ModelToolCall, Usage } from '../../contract/model-provider.js';
import { addUsage } from '../../engine/models/usage-sum.js';
import type { PluginMember, RegisteredTool } from '../../contract/plugin-member.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import { NEVER_ABORTED } from '../../engine/context/never-signal.js';
import { commitKernelWrites, turnValue } from '../../engine/state/kernel-writes.js';
import {
  ToolCallRun,
  startToolCall,
  toolFailure,
  toolMessage,
  type CallEnd,
  type CallStep,
} from '../../engine/tools/tool-pipeline.js';
import type { ToolResult } from '../../contract/tool-result.js';
import type { InferenceRequest } from '../../contract/hook-payloads.js';
import type { HandoffMark } from '../../contract/delegation.js';
import { attributeUsage, type UsageSplit } from './usage-attribution.js';
import { causedBy, roundCauses, spendRound } from './round-spend.js';
import { filterTools, mergeInference, ROUND_KEYS, roundMessages, toolDefinitions } from './round-request.js';
import { carriedTurnValues, SUSPENSION_VERSION, type SuspensionRecord } from '../durability/suspension-record.js';
import { runToolBatch, type BatchOutcome } from './tool-batch.js';
import { FinishedCalls } from './finished-calls.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import type { PendingApproval, ToolCallRecord, TurnResult, TurnStatus, TurnUsage } from './turn-result.js';
import { isoTime, type TurnStart } from '../durability/turn-record.js';
import type { TurnJournal } from '../durability/turn-journal.js';
import { outputInstructions, type TurnOutput } from './turn-output.js';
import { OutputPartials } from './output-partials.js';

/** The limits and model a turn runs with, from the agent spec. */
export interface TurnLimits {
  readonly model: ModelProvider;
  readonly maxRounds: number;
  readonly toolConcurrency: number;
  /** The most tool calls one response may ask for; more fail the turn before any runs. */
  readonly maxToolCallsPerRound: number;
  /** The turn's deadline in ms: its signal aborts when it passes. */
  readonly turnTimeoutMs?: number;
  readonly inference: InferenceRequest['inference'] | undefined;
  /** `final`: reply text is not streamed; the session emits the finished reply instead. */
  readonly streamText: 'live' | 'final';
  /** Repair rounds of a typed turn (`AgentSpec.maxOutputRepairs`). */
  readonly maxOutputRepairs: number;
  /** Whether every model of the agent constrains a typed answer itself; if not, the system prompt asks for it. */
  readonly nativeOutput: boolean;
}

/** A round whose model response the step journal holds (a turn going on after a crash): the loop starts there. */
export interface ReplayedRound {
  readonly round: number;
  /** The response after `llm.after` when that was journalled, else as the model gave it. */
  readonly response: ModelResponse;
  /** Whether `llm.after` had run on it and was journalled (then it does not run again). */
  readonly afterJournalled: boolean;
  /** The tools offered in that round, when they were not the view's. */
  readonly offered: readonly string[] | undefined;
}

/** How a turn ended, with what the session must store. */
export interface TurnEnd {
  readonly result: TurnResult;
  /** Messages to append to the transcript (empty for a suspended, cancelled or failed turn). */
  readonly append: readonly ChatMessage[];
  readonly suspension: SuspensionRecord | undefined;
  /** A handoff tool ran in the last round: the turn goes on with that agent (see `TurnExtension.handOver`, `delegation/handoff-continuation.ts`). */
  readonly handoff?: HandoffMark;
}

const NO_RECALL: readonly ChatMessage[] = [];
/** A turn no agent handed over: one shared empty record, read only, not one per turn. */
const NONE_HANDED_OVER: Readonly<Record<string, Usage>> = Object.freeze({});

/**
 * One turn's rounds (docs/architecture.md, "The life of a turn"): each round asks the model, runs the tool calls it asked
 * for, and goes on until an answer, `done(...)`, a Block, a Suspend, `maxRounds` or
 * cancellation. Used for new turns and to continue resumed ones.
 */
export class TurnRunner {
  rounds = 0;
  /** The turn's finished calls, compact; `toolCallRecords()` is `TurnResult.toolCalls`. */
  readonly finished = new FinishedCalls();
  readonly usage: Record<string, Usage> = {};
  /** Model usage by round (1-based), for `usage.byPlugin`: a round's tokens go to the plugins whose tools ran in the round before. */
  readonly roundUsage: Record<number, Usage> = {};
  /** Wall time of each round's model call, attributed as its tokens are. */
  readonly roundMs: Record<number, number> = {};
  /** When the model call of the round in progress started, and how long it took (set once it answered). */
  #modelStarted = 0;
  #modelMs: number | undefined;
  /** Model usage of agents that handed this turn over before its current agent, by agent. */
  handedOver: Readonly<Record<string, Usage>> = NONE_HANDED_OVER;
  /**
   * Adds what the turn's sub-agents and earlier agents used to its own usage: set by a turn
   * extension (delegation) when the agent delegates; a plain turn's usage is its own.
   */
  rollUp: UsageRollUp | undefined;
  /** This turn's messages: the user message, then assistant and tool messages. */
  messages: ChatMessage[] = [];
  /** The turn's step journal, when the store keeps one. */
  journal: TurnJournal | undefined;
  /** The turn's key (`SendOptions.key`, or one made for it), kept in its records. */
  key: string | undefined;
  /** Set on a turn rebuilt from its journal whose last round's calls had not all finished. */
  replayRound: ReplayedRound | undefined;
  /** A typed turn's answer: the DTO, and the repair round in progress. */
  output: TurnOutput | undefined;
  /** The system prompt with a typed turn's instructions, for a provider without native structured output. */
  #system: string | undefined;

  constructor(
    private readonly env: TurnEnv,
    private readonly limits: TurnLimits,
    readonly input: string,
    readonly instructions: string,
    private readonly transcript: readonly ChatMessage[],
    readonly startedAt: TurnStart,
  ) {}

  /** Takes over the progress of the runner of the agent that handed this turn over. */
  carryOn(previous: TurnRunner): void {
    this.rounds = previous.rounds;
    this.messages = previous.messages;
    this.journal = previous.journal;
    this.key = previous.key;
    this.output = previous.output;
    this.finished.addAll(previous.finished);
    Object.assign(this.usage, previous.usage);
    Object.assign(this.roundUsage, previous.roundUsage);
    Object.assign(this.roundMs, previous.roundMs);
  }

  /** Restores a suspended turn's progress before continuing it. */
  restore(record: SuspensionRecord): void {
    this.rounds = record.rounds;
    this.messages = [...record.messages];
    for (const call of record.toolCalls) this.finished.addRecord(call);
    Object.assign(this.usage, record.usage);
    if (record.roundUsage) Object.assign(this.roundUsage, record.roundUsage);
    if (record.roundMs) Object.assign(this.roundMs, record.roundMs);
    // Per-turn budgets go on from what the turn spent before it was suspended.
    this.env.site.spend.restore(record.hookMs, this.split(this.toolCallRecords()).byPlugin);
    this.handedOver = record.handedOver ?? NONE_HANDED_OVER;
    this.key = record.key;
  }

  /** Rounds until the turn ends; the caller runs `message.sending`, `task.end` and the checkpoint. */
  async loop(): Promise<TurnEnd> {
    const { env, limits } = this;
    while (this.rounds < limits.maxRounds || this.replayRound !== undefined) {
      this.checkCancelled();
      // A point without handlers is skipped here, before its payload is built or awaited.
      const hooks = env.view.hooks;
      let offered: readonly RegisteredTool[];
      let response: ModelResponse;
      let afterDone = false;
      const replayed = this.replayRound;
      if (replayed === undefined) {
        let recalled: readonly ChatMessage[] = NO_RECALL;
        if (hooks['memory.read'].length > 0) {
          const recalling = env.hooks.run('memory.read', { input: this.input, messages: this.messages }, env.site);
          recalled = recalling instanceof Promise ? await recalling : recalling;
        }
        // A turn whose level never had a steering key (the common case) reads none of them.
        const steered = env.site.scope.turn!.steered;
        offered =
          hooks['tool.register'].length > 0 || hooks['tool.select'].length > 0
            ? await this.selectTools()
            : steered
              ? filterTools(env.view.tools, env.site.scope.turn!.values)
              : env.view.tools;
        // The request is built and sent by `ask`, so no variable of this frame keeps it (or its
        // message list) while the round's tools run.
        this.#modelMs = undefined;
        response = await this.ask(offered, recalled);
        this.roundMs[this.rounds] = this.#modelMs ?? performance.now() - this.#modelStarted;
      } else {
        // The journal holds this round's model response: the model is not asked again.
        this.replayRound = undefined;
        offered = replayed.offered === undefined ? env.view.tools : toolsNamed(env, replayed.offered);
        response = replayed.response;
        afterDone = replayed.afterJournalled;
      }
      const round = this.rounds;
      // Checked here by name (a constant key), so a round without these handlers does not call the engine.
      if (!afterDone && hooks['llm.after'].length > 0) {
        const after = env.hooks.run('llm.after', response, env.site);
        response = after instanceof Promise ? await after : after;
        if (this.journal !== undefined) await this.journal.after(round, response);
      }
      this.addUsage(response);
      this.roundUsage[round] = response.usage;
      const causes = roundCauses(env, this.finished, round);
      const counting = spendRound(env, causes, response, this.roundMs[round] ?? 0);
      if (counting !== undefined) await counting;
      if (env.observed())
        env.emit({
          type: 'round.finished',
          sessionId: env.sessionId,
          turn: env.turnIndex,
          round,
          model: response.model,
          usage: response.usage,
          ...causedBy(env, causes),
        });
      this.messages.push({
        role: 'assistant',
        content: response.text,
        toolCalls: response.toolCalls.length > 0 ? response.toolCalls : undefined,
      });
      if (response.toolCalls.length === 0) {
        if (this.output === undefined && response.refusal === undefined) return this.end('completed', response.text);
        const answered = this.finalAnswer(response.text, response.refusal);
        if (answered !== undefined) return answered;
        continue;
      }
      if (response.toolCalls.length > limits.maxToolCallsPerRound)
        return this.tooManyCalls(response, limits.maxToolCallsPerRound);
      const byName =
        offered === env.view.tools ? env.view.toolsByName : new Map(offered.map((t) => [t.name, t] as const));
      const calls = response.toolCalls;
      // Not needed while the calls run: a suspended frame keeps its registers, and this one
      // would keep the response and its usage alive per waiting turn.
      // eslint-disable-next-line no-useless-assignment -- dropped for the garbage collector, as said above
      response = undefined!;
      let end: TurnEnd | undefined;
      if (calls.length === 1) {
        // One call (the common case) is awaited here, step by step: no batch, and no promise
        // or closure of its own to continue after the tool.
        let step: CallStep = startToolCall(env, calls[0]!, round, 0, byName);
        if (step instanceof Promise) step = await step;
        if (step instanceof ToolCallRun) {
          let result: ToolResult;
          try {
            result = await step.running;
          } catch (error) {
            result = toolFailure(error);
          }
          step = step.ran(result);
          if (step instanceof Promise) step = await step;
        }
        end = this.afterCall(calls[0]!, step as CallEnd);
      } else {
        end = this.afterCalls(calls, await runToolBatch(env, calls, round, byName, limits.toolConcurrency));
      }
      if (end) return end;
      if (!env.site.scope.turn!.steered) continue;
      const handoff = env.site.scope.turn!.values[KERNEL_KEYS.handoff] as HandoffMark | undefined;
      if (handoff !== undefined) return { ...this.end('completed', undefined), handoff };
    }
    return this.end('max_rounds', undefined);
  }

  /**
   * A typed answer (or a refusal), its assistant message last in `messages`: the turn's end,
   * or undefined when a repair round follows — the answer then leaves the turn's messages and
   * goes, with a note listing its field errors, with the next request only.
   */
  finalAnswer(text: string, refusal?: string): TurnEnd | undefined {
    const output = this.output;
    if (output !== undefined) output.pending = undefined;
    if (refusal !== undefined) {
      // The transcript says what happened: the refusal in place of the answer.
      this.messages[this.messages.length - 1] = { role: 'assistant', content: refusal };
      return this.end('failed', undefined, {
        code: 'ModelRefused',
        message: `The model refused to answer: ${refusal}`,
      });
    }
    if (output === undefined) return this.end('completed', text);
    const checked = output.check(text);
    if (checked.ok)
      return {
        result: this.result('completed', text, undefined, undefined, checked.value),
        append: [...this.messages],
        suspension: undefined,
      };
    if (checked.final === true || output.repairs >= output.maxRepairs || this.rounds >= this.limits.maxRounds)
      return this.end('failed', undefined, output.failure(checked.errors));
    output.repairs++;
    output.pending = [this.messages.pop()!, output.repairNote(checked.errors)];
    return undefined;
  }

  /**
   * The round's request (messages, tools, inference; the transform chain; `llm.before`), then
   * the model call. Synchronous up to the model call while the transforms and hooks are.
   */
  private ask(offered: readonly RegisteredTool[], recalled: readonly ChatMessage[]): Promise<ModelResponse> {
    const asked = this.request(offered, recalled);
    const journal = this.journal;
    if (journal === undefined) return asked;
    // The response is journalled before `llm.after` and before any of its calls runs.
    const names = offered === this.env.view.tools ? undefined : offered.map((t) => t.name);
    return asked.then((response) => {
      // The model's time, without the journal's write.
      this.#modelMs = performance.now() - this.#modelStarted;
      return journal.model(this.rounds, response, names).then(() => response);
    });
  }

  private request(offered: readonly RegisteredTool[], recalled: readonly ChatMessage[]): Promise<ModelResponse> {
    const { env, limits } = this;
    const level = env.site.scope.turn!;
    const turn = level.steered ? level.values : undefined;
    const messages = roundMessages(
      this.systemPrompt(),
      turn?.[KERNEL_KEYS.contextMessages] as ChatMessage[] | undefined,
      recalled.length ? recalled : NO_RECALL,
      this.transcript,
      this.messages,
    );
    const output = this.output;
    if (output?.pending !== undefined) {
      // The repair pair goes with this request only: an answer to it that calls tools goes on without it.
      messages.push(...output.pending);
      output.pending = undefined;
    }
    let request: InferenceRequest = {
      messages,
      tools: toolDefinitions(offered),
      inference: mergeInference(limits.inference, turn),
    };
    if (env.view.transforms.length > 0) {
      const transformed = this.transform(request);
      if (transformed instanceof Promise) return transformed.then((changed) => this.beforeModel(changed));
      request = transformed;
    }
    return this.beforeModel(request);
  }

  /** The instructions, and for a typed turn on a provider without native structured output, what its answer must be. */
  private systemPrompt(): string {
    if (this.output?.spec === undefined || this.limits.nativeOutput) return this.instructions;
    return (this.#system ??= `${this.instructions}\n\n${outputInstructions(this.output.spec.format)}`);
  }

  private beforeModel(request: InferenceRequest): Promise<ModelResponse> {
    if (this.env.view.hooks['llm.before'].length === 0) return this.callModel(request);
    const before = this.env.hooks.run('llm.before', request, this.env.site);
    if (before instanceof Promise) return before.then((changed) => this.callModel(changed));
    return this.callModel(before);
  }

  private callModel(request: InferenceRequest): Promise<ModelResponse> {
    const { env, limits } = this;
    // Round overrides and filters set before this call applied to it; ones set from here on apply to the next.
    this.clearRoundKeys();
    this.checkCancelled();
    const round = ++this.rounds;
    if (env.observed()) env.emit({ type: 'round.started', sessionId: env.sessionId, turn: env.turnIndex, round });
    this.#modelStarted = performance.now();
    // Named fields, not `...request`: spreading the transformed request and adding fields
    // takes V8's slow object-clone path every round.
    const output = this.output?.spec?.format;
    if (!env.observed())
      return limits.model.call({
        messages: request.messages,
        tools: request.tools,
        inference: request.inference,
        signal: env.stopper !== undefined ? env.stopper.signal : env.site.signal,
        onDelta: undefined,
        output,
      });
    // Deltas are scrubbed as one stream, so a secret split across pieces is still recognised.
    const final = limits.streamText === 'final';
    const deltas = new DeltaRedactor(
      (delta) => env.emit({ type: 'model.delta', sessionId: env.sessionId, delta }),
      (tool) => secretFields((env.view.toolsByName.get(tool) ?? env.registry.tools.get(tool))?.input),
    );
    // A typed answer is also sent as the object so far; not when text is held back for `message.sending`.
    const partials = output !== undefined && !final ? new OutputPartials(env, output.name, round) : undefined;
    const flush = () => {
      deltas.flush();
      partials?.flush();
    };
    return limits.model
      .call({
        messages: request.messages,
        tools: request.tools,
        inference: request.inference,
        signal: env.stopper !== undefined ? env.stopper.signal : env.site.signal,
        onDelta: final
          ? (delta) => delta.type !== 'text' && deltas.push(delta)
          : partials === undefined
            ? (delta) => deltas.push(delta)
            : (delta) => {
                deltas.push(delta);
                partials.push(delta);
              },
        output,
      })
      .then(
        (response) => {
          flush();
          return response;
        },
        (error: unknown) => {
          flush();
          throw error;
        },
      );
  }

  /** `afterCalls` for a round of one call: a result (the common case) builds no list. */
  afterCall(call: ModelToolCall, outcome: CallEnd): TurnEnd | undefined {
    if (outcome.kind !== 'result') return this.afterCalls([call], [outcome]);
    this.finished.add(call, outcome.record);
    // Pushed first: a turn cancelled now keeps the finished call's result (`session.cancel()`).
    this.pushToolMessage(call.id, call.name, outcome.content);
    this.checkCancelled();
    if (!outcome.done) return undefined;
    const done = replyText(outcome.record.value);
    this.messages.push({ role: 'assistant', content: done });
    return this.end('completed', done);
  }

  /** Applies a round's outcomes: records results, and ends the turn on Block, Suspend or done. */
  afterCalls(calls: readonly ModelToolCall[], outcomes: readonly BatchOutcome[]): TurnEnd | undefined {
    // Contents by call position: an object keyed by call ids (unique forever) would give V8
    // a new hidden class per tool call. The id-keyed record is built only when it is kept.
    const contents = new Array<string | undefined>(outcomes.length);
    let pending: PendingApproval[] | undefined;
    let blocked: { reason: string; by: string } | undefined;
    let done: string | undefined;
    for (let index = 0; index < outcomes.length; index++) {
      const outcome = outcomes[index]!;
      if (outcome.kind === 'result') {
        this.finished.add(calls[index]!, outcome.record);
        contents[index] = outcome.content;
        if (outcome.done && done === undefined) done = replyText(outcome.record.value);
      } else if (outcome.kind === 'suspended') {
        // A sub-agent's suspension lists the calls waiting inside it, not the call to it.
        pending ??= [];
        if (outcome.child) pending.push(...outcome.child.pending);
        else pending.push(outcome.pending);
      } else if (outcome.kind === 'blocked') {
        blocked ??= outcome;
      }
    }
    if (!blocked && (pending === undefined || pending.length === 0)) {
      for (let index = 0; index < calls.length; index++)
        this.pushToolMessage(calls[index]!.id, calls[index]!.name, contents[index]);
      this.checkCancelled();
      if (done !== undefined) {
        this.messages.push({ role: 'assistant', content: done });
        return this.end('completed', done);
      }
      return undefined;
    }
    this.checkCancelled();
    const results: Record<string, string> = {};
    for (let index = 0; index < calls.length; index++)
      if (contents[index] !== undefined) results[calls[index]!.id] = contents[index]!;
    if (blocked) {
      for (const [index, call] of calls.entries()) {
        if (results[call.id] !== undefined) continue;
        const outcome = outcomes[index]!;
        const code = outcome.kind === 'blocked' && outcome.reason === blocked.reason ? 'Blocked' : 'Interrupted';
        const message =
          code === 'Blocked'
            ? `Blocked by ${blocked.by}: ${blocked.reason}`
            : 'Not run: the turn was blocked before this call started';
        results[call.id] = toolMessage({ ok: false, error: { code, message, retryable: false } });
      }
      this.pushToolMessages(asCalls(calls), results);
      return this.end('blocked', undefined, { code: 'Blocked', message: `${blocked.by}: ${blocked.reason}` });
    }
    if (pending !== undefined && pending.length > 0) {
      const record: SuspensionRecord = {
        version: SUSPENSION_VERSION,
        turnIndex: this.env.turnIndex,
        input: this.input,
        startedAt: isoTime(this.startedAt),
        instructions: this.instructions,
        rounds: this.rounds,
        messages: this.messages,
        calls: calls.map((c) => ({ callId: c.id, tool: c.name, arguments: c.arguments })),
        results,
        pending,
        decisions: [],
        toolCalls: this.toolCallRecords(),
        usage: this.usage,
        ...(Object.keys(this.handedOver).length > 0 && { handedOver: this.handedOver }),
        turn: this.turnValues(),
        ...(done !== undefined && { done }),
        ...(this.key !== undefined && { key: this.key }),
        suspendedAt: new Date().toISOString(),
        roundUsage: this.roundUsage,
        roundMs: this.roundMs,
        hookMs: { ...this.env.site.spend.hookMs },
      };
      return { result: this.result('suspended', undefined, undefined, pending), append: [], suspension: record };
    }
    return undefined;
  }

  /** Tool messages in call order, as the model expects them after its assistant message. */
  pushToolMessages(
    calls: readonly { readonly callId: string; readonly tool: string }[],
    results: Readonly<Record<string, string>>,
  ): void {
    for (const { callId: id, tool } of calls) this.pushToolMessage(id, tool, results[id]);
  }

  private pushToolMessage(id: string, tool: string, content: string | undefined): void {
    this.messages.push({
      role: 'tool',
      toolCallId: id,
      name: tool,
      content:
        content ??
        toolMessage({ ok: false, error: { code: 'Interrupted', message: 'No result was recorded', retryable: false } }),
    });
  }

  /** Turn-level context to keep in a suspension record. */
  turnValues(): Record<string, unknown> {
    return carriedTurnValues(this.env.site.scope.turn!.values, [KERNEL_KEYS.turnInput, KERNEL_KEYS.turnIndex]);
  }

  /** The turn's finished calls as `TurnResult.toolCalls` lists them: built anew on each call. */
  toolCallRecords(): ToolCallRecord[] {
    return this.finished.records();
  }

  result(
    status: TurnStatus,
    reply: string | undefined,
    error?: { code: string; message: string },
    suspended?: readonly PendingApproval[],
    output?: object,
  ): TurnResult {
    const toolCalls = this.toolCallRecords();
    const usage = this.turnUsage(toolCalls);
    const result: TurnResult = {
      status,
      reply,
      rounds: this.rounds,
      toolCalls,
      usage: { ...usage, ...this.split(toolCalls, usage) },
      suspended,
      error,
    };
    return output === undefined ? result : { ...result, output };
  }

  /** The turn's spend so far by plugin and owner (`usage.byPlugin` / `byOwner`). */
  /** The turn's usage: its own model calls', with its sub-agents' and earlier agents' where it delegates. */
  turnUsage(toolCalls: readonly ToolCallRecord[]): TurnUsage {
    const own = totalUsage(this.usage);
    return this.rollUp === undefined ? own : this.rollUp(own, toolCalls, this.env.agent, this.handedOver);
  }

  /** The name of the agent whose turn this is. */
  get agent(): string | undefined {
    return this.env.agent;
  }

  split(toolCalls: readonly ToolCallRecord[], usage: Usage = this.turnUsage(toolCalls)): UsageSplit {
    const tools = this.env.registry.tools;
    const owners = this.env.registry.byName;
    return attributeUsage(
      usage,
      this.roundUsage,
      toolCalls,
      (tool) => {
        const plugin = tools.get(tool)?.plugin;
        return plugin === undefined ? undefined : { plugin, owner: owners.get(plugin)?.definition.owner };
      },
      {
        hookMs: this.env.site.spend.hookMs,
        roundMs: this.roundMs,
        ownerOf: (plugin) => owners.get(plugin)?.definition.owner,
      },
    );
  }

  /** A response asking for more calls than the agent allows: none runs, and the turn fails saying so. */
  private tooManyCalls(response: ModelResponse, limit: number): TurnEnd {
    const message = `The model (${response.model}) asked for ${response.toolCalls.length} tool calls in one round, more than the agent's maxToolCallsPerRound (${limit}); none of them ran. Raise maxToolCallsPerRound in the agent spec if the model means it, or check the model`;
    // The assistant message goes unrecorded: its calls have no results, which a provider would refuse next turn.
    this.messages.pop();
    return this.end('failed', undefined, { code: 'ModelFailed', message });
  }

  /** The turn's end; a completed typed turn's reply (a tool's `done(...)`) is checked against its DTO, without repair rounds. */
  end(status: TurnStatus, reply: string | undefined, error?: { code: string; message: string }): TurnEnd {
    const output = this.output;
    if (output !== undefined && status === 'completed' && reply !== undefined) {
      const checked = output.check(reply);
      if (!checked.ok)
        return {
          result: this.result('failed', undefined, output.failure(checked.errors)),
          append: [...this.messages],
          suspension: undefined,
        };
      return {
        result: this.result(status, reply, undefined, undefined, checked.value),
        append: [...this.messages],
        suspension: undefined,
      };
    }
    return { result: this.result(status, reply, error), append: [...this.messages], suspension: undefined };
  }

  /**
   * `tool.register` may add tools of plugins outside the agent's filter; `tool.select`
   * sees plain candidates (never the tools themselves) and may narrow or reorder them.
   */
  private async selectTools(): Promise<readonly RegisteredTool[]> {
    const { env } = this;
    let tools: readonly RegisteredTool[] = env.view.tools;
    const registered = await env.hooks.run('tool.register', { round: this.rounds + 1 }, env.site);
    if (registered.length > 0) {
      const extra = registered
        .map((name) => env.registry.tools.get(name))
        .filter((t): t is RegisteredTool => t !== undefined && !tools.includes(t));
      tools = [...tools, ...extra];
    }
    const candidates = toolCandidates(tools);
    const selected = await env.hooks.run('tool.select', candidates, env.site);
    const chosen = selected === candidates ? tools : pickTools(tools, selected);
    // Read the turn now: memory.read and tool.register hooks of this round may have added filters.
    return filterTools(chosen, env.site.scope.turn!.values);
  }

  /**
   * The transform chain. Synchronous while the transforms are: a transform that returns a
   * promise hands the rest of the chain to {@link transformAsync}. Transforms are pure, so
   * one snapshot serves the whole chain.
   */
  private transform(request: InferenceRequest): InferenceRequest | Promise<InferenceRequest> {
    const { env } = this;
    const transforms = env.view.transforms;
    const site: MemberSite = {
      scope: env.site.scope,
      snapshot: env.site.scope.snapshot(),
      schema: env.registry,
      point: 'transform',
      readOnly: true,
      signal: env.site.signal,
    };
    const spend = env.site.spend;
    for (let index = 0; index < transforms.length; index++) {
      const transform = transforms[index]!;
      const started = performance.now();
      let out: unknown;
      try {
        out = callMember(transform, request, site);
      } catch (error) {
        spend.addHook(transform.plugin, performance.now() - started);
        throw transformFailed(transform, error);
      }
      if (out instanceof Promise) return this.transformAsync(request, site, index, out, started);
      spend.addHook(transform.plugin, performance.now() - started);
      if (out !== undefined) request = out as InferenceRequest;
    }
    return request;
  }

  private async transformAsync(
    request: InferenceRequest,
    site: MemberSite,
    from: number,
    pending: Promise<unknown>,
    pendingSince: number,
  ): Promise<InferenceRequest> {
    const transforms = this.env.view.transforms;
    const spend = this.env.site.spend;
    for (let index = from; index < transforms.length; index++) {
      const transform = transforms[index]!;
      const started = index === from ? pendingSince : performance.now();
      try {
        const out = await (index === from ? pending : callMember(transform, request, site));
        if (out !== undefined) request = out as InferenceRequest;
      } catch (error) {
        throw transformFailed(transform, error);
      } finally {
        spend.addHook(transform.plugin, performance.now() - started);
      }
    }
    return request;
  }

  /** Round-scoped overrides and tool filters last one model call. */
  private clearRoundKeys(): void {
    const level = this.env.site.scope.turn!;
    if (!level.steered) return;
    const values = level.values;
    if (
      values[ROUND_KEYS[0]] !== undefined ||
      values[ROUND_KEYS[1]] !== undefined ||
      values[ROUND_KEYS[2]] !== undefined
    ) {
      commitKernelWrites(
        this.env.site.scope,
        this.env.registry,
        ROUND_KEYS.map((key) => turnValue(key, undefined)),
      );
    }
  }

  private addUsage(response: ModelResponse): void {
    const previous = this.usage[response.model];
    this.usage[response.model] = previous ? addUsage(previous, response.usage) : response.usage;
  }

  private checkCancelled(): void {
    // A turn without a caller's signal has the shared one that never aborts: no getter call (it validates its receiver).
    const stopper = this.env.stopper;
    if (stopper !== undefined) {
      if (stopper.signal.aborted) throw cancelled();
      return;
    }
    const signal = this.env.site.signal;
    if (signal !== NEVER_ABORTED && signal.aborted) throw cancelled();
  }
}

function transformFailed(transform: PluginMember, error: unknown): TrellisError {
  return new TrellisError(
    TrellisError.is(error) ? error.code : 'HookFailed',
    `Transform ${transform.plugin}.${transform.method} failed: ${describeError(error)}`,
    {
      hint: 'Transforms must be pure functions of the request; fix the transform',
      details: { plugin: transform.plugin, point: 'transform' },
      cause: error,
    },
  );
}

export function cancelled(): TrellisError {
  return new TrellisError('Cancelled', 'The turn was cancelled', { hint: 'Send the message again to retry' });
}

/**
 * How a turn that delegates adds the usage of its sub-agents (their calls' `usage`) and of the
 * agents that handed it over to its own: see `src/agent/delegation/usage-rollup.ts`.
 */
export type UsageRollUp = (
  own: TurnUsage,
  calls: readonly ToolCallRecord[],
  agent: string | undefined,
  handedOver: Readonly<Record<string, Usage>>,
) => TurnUsage;

/**
 * The rounds of `runner`, to the end that may ask for a handoff. A handoff approved on
 * resume (marked before the rounds go on) is that end, before any round runs.
 */
export function runRounds(env: TurnEnv, runner: TurnRunner): Promise<TurnEnd> {
  const approved = env.site.scope.turn!.values[KERNEL_KEYS.handoff] as HandoffMark | undefined;
  if (approved) return Promise.resolve({ ...runner.end('completed', undefined), handoff: approved });
  return runner.loop();
}

export function totalUsage(byModel: Readonly<Record<string, Usage>>): TurnUsage {
  let sum: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  for (const u of Object.values(byModel)) sum = addUsage(sum, u);
  return { ...sum, byModel };
}

/** The tools a journalled round offered, by name: the view's, or any installed one `tool.register` added. */
function toolsNamed(env: TurnEnv, names: readonly string[]): RegisteredTool[] {
  const tools: RegisteredTool[] = [];
  for (const name of names) {
    const tool = env.view.toolsByName.get(name) ?? env.registry.tools.get(name);
    if (tool !== undefined) tools.push(tool);
  }
  return tools;
}

function asCalls(calls: readonly ModelToolCall[]): { callId: string; tool: string }[] {
  return calls.map((c) => ({ callId: c.id, tool: c.name }));
}

export function replyText(value: unknown): string {
  return typeof value === 'string' ? value : JSON.stringify(value ?? null);
}

const candidateLists = new WeakMap<readonly RegisteredTool[], readonly ToolCandidate[]>();

/** The plain descriptions `tool.select` sees; built once per tool list. */
function toolCandidates(tools: readonly RegisteredTool[]): readonly ToolCandidate[] {
  let list = candidateLists.get(tools);
  if (!list) {
    list = Object.freeze(
      tools.map((t) =>
        Object.freeze({ name: t.name, plugin: t.plugin, description: t.description, tags: t.tags, schema: t.schema }),
      ),
    );
    candidateLists.set(tools, list);
  }
  return list;
}

/** The tools `tool.select` kept, in its order; names that were not candidates are ignored. */
function pickTools(tools: readonly RegisteredTool[], selected: readonly ToolCandidate[]): RegisteredTool[] {
  const byName = new Map(tools.map((t) => [t.name, t] as const));
  const picked: RegisteredTool[] = [];
  for (const candidate of selected) {
    const tool = byName.get(candidate?.name);
    if (tool && !picked.includes(tool)) picked.push(tool);
  }
  return picked;
}
