import type { TurnStopper } from '../../engine/context/turn-stopper.js';
import { ContextLevel } from '../../engine/context/context-level.js';
import type { ToolCallRecord } from '../../contract/tool-result.js';
import type { ChatMessage, ModelResponse, Usage } from '../../contract/model-provider.js';
import { addUsage } from '../../engine/models/usage-sum.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import type { CallResultEnd } from '../../engine/tools/call-end.js';
import { afterRounds } from '../turn/new-turn.js';
import type { AgentBinding } from '../session-host.js';
import { applyDelta, type RoundReplay } from './turn-journal.js';
import {
  historyOf,
  inTurnEnvelope,
  journalOf,
  turnEnv,
  turnRunner,
  type SessionParts,
  type TurnMeta,
} from '../turn/turn-envelope.js';
import type { TurnResult } from '../turn/turn-result.js';
import { replyText, runRounds, type ReplayedRound, type TurnEnd } from '../turn/turn-runner.js';
import { toolMessage } from '../../engine/tools/tool-pipeline.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { openStepOf, type ModelStep, type ResultStep, type StateDelta, type TurnStep } from './turn-steps.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { storedOutput, type OutputSpec } from '../turn/turn-output.js';

/** A recovery's inputs: the host's turn-level context and the caller's signal, as a send takes them. */
export interface RecoverTurn {
  readonly context: Readonly<Record<string, unknown>> | undefined;
  readonly signal: AbortSignal | TurnStopper | undefined;
  /** Other work of the caller follows under the same lease: the turn's checkpoint keeps it. */
  readonly keepsLease?: boolean;
  /** The DTO of the caller that goes on with its own turn (the same key), for a typed turn (see `storedOutput`). */
  readonly output?: OutputSpec;
}

/** A round of the journal: its model response (and `llm.after`'s), and its calls' progress. */
interface JournalRound {
  readonly round: number;
  readonly model: ModelStep;
  after: ModelResponse | undefined;
  readonly results: Map<number, ResultStep>;
  readonly started: Set<number>;
}

/**
 * Goes on with a turn that a crash cut off, from its step journal (docs/durable-steps.md), in this
 * process or any other: the turn's state is rebuilt as the journal left it — messages,
 * rounds, finished calls, usage, session and turn values — and the turn goes on from the first
 * step that did not complete. No journalled model response is asked for again and no finished
 * call runs again; a call that started and left no result is in doubt, and its tool's
 * `onCrash` says what becomes of it (run again with the same idempotency key, or a
 * `retry`/`skip` decision). `message.received`, `task.start` and `planning.started` do not
 * run again (what they produced is in the journal); `task.end` and the checkpoint run once,
 * when the turn ends.
 */
export function runRecoveredTurn(
  sessionParts: SessionParts,
  steps: readonly TurnStep[],
  recover: RecoverTurn,
): Promise<TurnResult> {
  const open = openStepOf(steps);
  const parts = withAgent(sessionParts, open.agent);
  const env = turnEnv(parts, new ContextLevel(), recover.signal, open.turn, true);
  const rebuilt = rebuild(steps, toolNames(env));
  // State as the journal left it: persistent session keys replaced, the turn level rebuilt
  // with the host's context of this request.
  const schema = parts.host.registry;
  parts.state.replace((key) => schema.stateKey(key)?.persistent === true, rebuilt.session);
  env.site.scope.turn!.values = {
    ...rebuilt.turn,
    ...recover.context,
    [KERNEL_KEYS.turnInput]: open.input,
    [KERNEL_KEYS.turnIndex]: open.turn,
  };
  const runner = turnRunner(parts, env, open.taskInput, open.instructions, historyOf(parts), open.startedAt);
  runner.rounds = rebuilt.rounds;
  runner.messages = rebuilt.messages;
  for (const record of rebuilt.toolCalls) runner.finished.addRecord(record);
  Object.assign(runner.usage, rebuilt.usage);
  Object.assign(runner.roundUsage, rebuilt.roundUsage);
  if (open.handedOver !== undefined) runner.handedOver = open.handedOver;
  runner.key = open.key;
  runner.replayRound = rebuilt.replayRound;
  runner.output = storedOutput(rebuilt.turn, recover.output, parts.agent);
  if (runner.output !== undefined) runner.output.repairs = rebuilt.repairs;
  const journal = journalOf(env);
  if (journal !== undefined) {
    journal.resume(rebuilt.replay, open.input);
    runner.journal = journal;
  }
  const meta: TurnMeta = {
    turnIndex: open.turn,
    input: open.input,
    taskInput: open.taskInput,
    startedAt: open.startedAt,
    taskStarted: true,
    runner,
    key: open.key,
    recovered: true,
    keepsLease: recover.keepsLease === true,
  };
  const body = (): Promise<TurnEnd> => {
    if (rebuilt.answered !== undefined) {
      // The last model call answered: a typed turn checks the answer, and may go on with a repair round.
      const end = runner.finalAnswer(rebuilt.answered, rebuilt.refusal);
      return end !== undefined ? Promise.resolve(end) : runRounds(env, runner);
    }
    if (rebuilt.ended !== undefined) return Promise.resolve(runner.end('completed', rebuilt.ended));
    return runRounds(env, runner);
  };
  return inTurnEnvelope(parts, env, meta, body, afterRounds);
}

/** What the journal rebuilds: the runner's progress, the state, and the round to go on in. */
interface Rebuilt {
  rounds: number;
  messages: ChatMessage[];
  toolCalls: ToolCallRecord[];
  usage: Record<string, Usage>;
  /** Model usage by round, as the loop keeps it for `usage.byPlugin`. */
  roundUsage: Record<number, Usage>;
  session: Record<string, unknown>;
  turn: Record<string, unknown>;
  /** The turn had ended (a call's `done(...)`, a resumed turn's): its reply. */
  ended: string | undefined;
  /** The last model call answered (no tool calls): its text, checked as the loop checks an answer. */
  answered: string | undefined;
  /** That answer was a refusal: why. */
  refusal: string | undefined;
  /** Answers a typed turn sent back for repair (each followed by another model call). */
  repairs: number;
  replayRound: ReplayedRound | undefined;
  replay: RoundReplay | undefined;
}

/**
 * Folds the steps: the opening step's state, then each step's changes; every round whose
 * calls all finished is applied as the loop applies it (the assistant message, the calls'
 * records and tool messages in call order, its usage); a last round whose calls did not all
 * finish is where the loop goes on.
 */
function rebuild(steps: readonly TurnStep[], tools: ReadonlyMap<string, unknown>): Rebuilt {
  const open = openStepOf(steps);
  const state: Rebuilt = {
    rounds: open.rounds,
    messages: [...open.messages],
    toolCalls: [...open.toolCalls],
    usage: { ...open.usage },
    roundUsage: { ...open.roundUsage },
    session: { ...open.session },
    turn: { ...open.turnValues },
    ended: undefined,
    answered: undefined,
    refusal: undefined,
    repairs: 0,
    replayRound: undefined,
    replay: undefined,
  };
  if (open.done !== undefined) {
    // A resumed turn whose decided call ended it with `done(...)`.
    state.messages.push({ role: 'assistant', content: open.done });
    state.ended = open.done;
    return state;
  }
  let round: JournalRound | undefined;
  for (let index = 1; index < steps.length; index++) {
    const step = steps[index]!;
    switch (step.k) {
      case 'model':
        if (round !== undefined) finishRound(state, round, true);
        round = { round: step.round, model: step, after: undefined, results: new Map(), started: new Set() };
        state.rounds = step.round;
        applyState(state, step);
        break;
      case 'after':
        if (round?.round === step.round) round.after = step.response;
        applyState(state, step);
        break;
      case 'start':
        if (round?.round === step.round) round.started.add(step.at);
        break;
      case 'result':
        if (round?.round === step.round) round.results.set(step.at, step);
        applyState(state, step);
        recordResult(state.turn, step.record, tools);
        break;
      case 'open':
        // parseSteps starts at the last opening step: no other one follows it.
        break;
    }
  }
  if (round === undefined) return state;
  const calls = round.model.response.toolCalls;
  if (calls.length > 0 && round.results.size < calls.length) {
    state.replayRound = {
      round: round.round,
      response: round.after ?? round.model.response,
      afterJournalled: round.after !== undefined,
      offered: round.model.offered,
    };
    const results = new Map<number, CallResultEnd>();
    for (const [at, step] of round.results)
      results.set(at, { kind: 'result', record: step.record, content: step.content, done: step.done });
    state.replay = { round: round.round, results, started: round.started };
    return state;
  }
  const done = finishRound(state, round, false);
  // The last model call answered, or a call ended the turn: the turn ends with that reply.
  if (calls.length === 0) {
    const response = round.after ?? round.model.response;
    state.answered = response.text;
    state.refusal = response.refusal;
  } else if (done !== undefined) state.ended = done;
  return state;
}

/**
 * A round whose calls all finished, applied as `TurnRunner` applies one; the reply of a call's
 * `done(...)`, if one gave it. An answer another model call followed (`superseded`) was a typed
 * answer sent back for repair: it counts its usage, and left the turn's messages.
 */
function finishRound(state: Rebuilt, round: JournalRound, superseded: boolean): string | undefined {
  const response = round.after ?? round.model.response;
  const previous = state.usage[response.model];
  state.usage[response.model] = previous ? addUsage(previous, response.usage) : response.usage;
  state.roundUsage[round.round] = response.usage;
  const calls = response.toolCalls;
  if (superseded && calls.length === 0) {
    state.repairs++;
    return undefined;
  }
  state.messages.push({ role: 'assistant', content: response.text, toolCalls: calls.length > 0 ? calls : undefined });
  let done: string | undefined;
  for (let at = 0; at < calls.length; at++) {
    const result = round.results.get(at);
    if (result === undefined) continue;
    state.toolCalls.push(result.record);
    if (result.done && done === undefined) done = replyText(result.record.value);
  }
  for (let at = 0; at < calls.length; at++) {
    const call = calls[at]!;
    state.messages.push({
      role: 'tool',
      toolCallId: call.id,
      name: call.name,
      content:
        round.results.get(at)?.content ??
        toolMessage({ ok: false, error: { code: 'Interrupted', message: 'No result was recorded', retryable: false } }),
    });
  }
  if (done !== undefined) state.messages.push({ role: 'assistant', content: done });
  return done;
}

function applyState(state: Rebuilt, step: StateDelta): void {
  if (step.s !== undefined) state.session = applyDelta(state.session, step.s);
  if (step.t !== undefined) state.turn = applyDelta(state.turn, step.t);
}

/** The turn-level record of a finished call, rebuilt as the tool-call path made it (`recordToolResult`). */
function recordResult(
  turn: Record<string, unknown>,
  record: ToolCallRecord,
  tools: ReadonlyMap<string, unknown>,
): void {
  if (!tools.has(record.tool)) return;
  const value = record.ok ? record.value : { error: record.error };
  const previous = turn[KERNEL_KEYS.lastToolResults] as { round: number }[] | undefined;
  const latest: unknown[] = previous === undefined ? [] : previous.filter((entry) => entry.round === record.round);
  latest.push({ callId: record.callId, tool: record.tool, ok: record.ok, result: value, round: record.round });
  turn[`${record.tool}.result`] = value;
  turn[KERNEL_KEYS.lastToolResults] = latest;
}

/** The session's parts with the agent the journal names (the one a handoff gave the turn to). */
function withAgent(parts: SessionParts, agent: string): SessionParts {
  if (agent === parts.agent.spec.name) return parts;
  const found: AgentBinding | undefined = parts.host.agent?.(agent);
  if (!found) {
    throw new TrellisError(
      'UnknownAgent',
      `Session '${parts.id}' was running a turn of agent '${agent}' when its process stopped, and this app has no agent of that name`,
      {
        hint: `Create it with app.agent({ name: '${agent}', … }) before using the session in this process`,
      },
    );
  }
  return { ...parts, agent: found };
}

/** Every tool a result may have been recorded for: the view's (delegation tools included) and the installed ones. */
function toolNames(env: TurnEnv): ReadonlyMap<string, unknown> {
  return new Map<string, unknown>([...env.registry.tools, ...env.view.toolsByName]);
}
