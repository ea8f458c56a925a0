import { performance } from 'node:perf_hooks';
import type { ContentPart } from '../../contract/content-part.js';
import type { DelegationFrame } from '../../contract/delegation.js';
import type { ContextLevel } from '../../engine/context/context-level.js';
import { ContextScope } from '../../engine/state/context-scope.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { redactEvent } from '../../engine/events/redact-event.js';
import type { TrellisEvent } from '../../engine/events/trellis-event.js';
import { isStop, type HookOutcome } from '../../engine/hooks/hook-engine.js';
import type { SessionState } from '../../engine/state/session-state.js';
import { NEVER_ABORTED } from '../../engine/context/never-signal.js';
import { TurnStopper } from '../../engine/context/turn-stopper.js';
import { TurnSpend } from '../../contract/turn-spend.js';
import type { AgentBinding, SessionHost } from '../session-host.js';
import type { SessionEvents } from '../session-events.js';
import type { SessionSync } from '../durability/session-sync.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { errorInfo, type TurnStart } from '../durability/turn-record.js';
import { cancelled, TurnRunner, type TurnEnd, type UsageRollUp } from './turn-runner.js';
import { withHookMs } from './usage-attribution.js';
import { TurnJournal } from '../durability/turn-journal.js';
import type { TurnResult } from './turn-result.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import { toolMessage } from '../../engine/tools/tool-pipeline.js';

/** The parts of one session that its turns (new and resumed) work with. */
export interface SessionParts {
  readonly host: SessionHost;
  readonly agent: AgentBinding;
  readonly id: string;
  readonly state: SessionState;
  readonly sync: SessionSync;
  readonly subject: SessionEvents;
  /** Set when the session runs a sub-agent's turn for another agent's call. */
  readonly delegation?: DelegationFrame;
  /** What the turn runs besides its own rounds: set only when the agent delegates (see {@link TurnExtension}). */
  readonly extension?: TurnExtension;
}

/**
 * What a turn runs besides its own rounds, plugged in by the session when its agent has
 * `agents` or `handoffs`, or the session was handed over (`src/agent/delegation/delegation-extension.ts`).
 * A plain turn has none and runs none of it: the turn loop (this file, `new-turn.ts`,
 * `turn-runner.ts`, `recovered-turn.ts`) imports no delegation file.
 */
export interface TurnExtension {
  /** The turn's environment with what the extension adds to its view (agent and handoff tools). */
  extendEnv(env: TurnEnv, parts: SessionParts): TurnEnv;
  /** The transcript as the agent that has the session sees it. */
  history(parts: SessionParts): readonly ChatMessage[];
  /** Rounds that ended asking for a handoff: the same turn goes on with the agents it is handed to. */
  handOver(parts: SessionParts, env: TurnEnv, runner: TurnRunner, end: TurnEnd): Promise<LoopEnd>;
  /** Adds sub-agents' and earlier agents' usage to the turn's own. */
  readonly rollUpUsage: UsageRollUp;
}

/** Where a turn stands after its rounds: the parts, env and runner of the agent that ended it. */
export interface LoopEnd {
  readonly parts: SessionParts;
  readonly env: TurnEnv;
  readonly runner: TurnRunner;
  readonly end: TurnEnd;
}

/** The transcript the turn's agent sees: the session's, or the extension's view of it. */
export function historyOf(parts: SessionParts): readonly ChatMessage[] {
  return parts.extension === undefined ? parts.sync.history : parts.extension.history(parts);
}

/** A runner for the turn, with the extension's usage roll-up when the agent delegates. */
export function turnRunner(
  parts: SessionParts,
  env: TurnEnv,
  input: string,
  instructions: string,
  history: readonly ChatMessage[],
  startedAt: TurnStart,
): TurnRunner {
  const runner = new TurnRunner(env, parts.agent.limits, input, instructions, history, startedAt);
  runner.rollUp = parts.extension?.rollUpUsage;
  return runner;
}

/** The rounds' end, handed over to the agents a handoff names when the turn has the extension for it. */
export function afterHandoffs(
  parts: SessionParts,
  env: TurnEnv,
  runner: TurnRunner,
  end: TurnEnd,
): LoopEnd | Promise<LoopEnd> {
  if (end.handoff === undefined || parts.extension === undefined) return { parts, env, runner, end };
  return parts.extension.handOver(parts, env, runner, end);
}

/** Where a turn stands, as the envelope needs to know it. */
export interface TurnMeta {
  readonly turnIndex: number;
  /** The message as it came in: the turn record keeps it. */
  readonly input: string;
  /** The input after `message.received` rewrote it: `task.end` sees it. */
  taskInput: string;
  readonly startedAt: TurnStart;
  /** Set once `task.start` was attempted: from then on `task.end` always runs. */
  taskStarted: boolean;
  /** The runner once the turn has one; a failure before that gets a bare one. */
  runner: TurnRunner | undefined;
  /** The turn's key, kept in its record (absent for a turn of a session without a store and without a caller's key). */
  readonly key?: string;
  /** The turn goes on from its step journal after a crash. */
  readonly recovered?: boolean;
  /** The message's parts when it has images or files (see `NewTurn.parts`). */
  readonly parts?: readonly ContentPart[];
  /** More work follows under the same lease (a recovered turn before the message that found it): its checkpoint keeps the lease. */
  readonly keepsLease?: boolean;
}

/**
 * The turn's environment: the registry snapshot it keeps, its scope, hooks and events, and
 * its step journal: `journal: true` starts one when the store keeps step journals (a new,
 * resumed or recovered turn), a `TurnJournal` goes on with the turn's own (a handoff), and
 * nothing (a direct tool call, a cancel) runs without one. A handoff passes the turn's `spend`
 * on, so the turn counts its plugins' hook time in one place whichever agent has it.
 */
export function turnEnv(
  parts: SessionParts,
  turn: ContextLevel,
  given: AbortSignal | TurnStopper | undefined,
  turnIndex: number,
  journal: TurnJournal | boolean = false,
  spend = new TurnSpend(),
): TurnEnv {
  const { host } = parts;
  const stopper = given instanceof TurnStopper ? given : undefined;
  const deadline = parts.agent.limits.turnTimeoutMs;
  let signal = stopper !== undefined ? undefined : (given as AbortSignal | undefined);
  // The deadline stops the turn as a cancel does: through its stopper, or through the signal tools see.
  if (deadline !== undefined) {
    if (stopper !== undefined) stopper.expireAfter(deadline, deadlineError(deadline));
    else signal = withDeadline(signal, deadline);
  }
  const registry = host.registry;
  const view = registry.view(parts.agent.spec.plugins);
  const scope = new ContextScope(parts.state, turn, undefined);
  const steps =
    journal === true
      ? parts.sync.journals
        ? new TurnJournal(parts.sync, scope, registry, registry.tools)
        : undefined
      : journal === false
        ? undefined
        : journal;
  const siteSignal = stopper !== undefined ? stopper.toolSignal : (signal ?? NEVER_ABORTED);
  const env = new TurnEnvironment(
    parts,
    registry,
    view,
    { scope, schema: registry, hooks: view.hooks, signal: siteSignal, spend },
    turnIndex,
    steps,
    stopper,
  );
  return parts.extension === undefined ? env : parts.extension.extendEnv(env, parts);
}

/** The step journal of the turn `env` belongs to, when it has one. */
export function journalOf(env: TurnEnv): TurnJournal | undefined {
  return env.steps instanceof TurnJournal ? env.steps : undefined;
}

/**
 * A turn's `TurnEnv`: `observed` and `emit` are methods, so a turn makes no closures for
 * them. Its fields are plain (not `#private`) so that a copy with another view (see
 * `withDelegationTools`) keeps working through the same prototype.
 */
class TurnEnvironment implements TurnEnv {
  readonly hooks: TurnEnv['hooks'];
  readonly state: TurnEnv['state'];
  readonly sessionId: string;
  readonly maxToolResultChars: number | undefined;
  readonly agent: string;
  readonly delegation: DelegationFrame | undefined;
  readonly subject: SessionEvents;
  readonly bus: SessionHost['events'];
  readonly budgets: SessionHost['budgets'];

  constructor(
    parts: SessionParts,
    readonly registry: TurnEnv['registry'],
    readonly view: TurnEnv['view'],
    readonly site: TurnEnv['site'],
    readonly turnIndex: number,
    readonly steps: TurnJournal | undefined,
    readonly stopper: TurnStopper | undefined,
  ) {
    const { host } = parts;
    this.hooks = host.hooks;
    this.state = host.state;
    this.sessionId = parts.id;
    this.maxToolResultChars = parts.agent.spec.maxToolResultChars;
    this.agent = parts.agent.spec.name;
    this.delegation = parts.delegation;
    this.subject = parts.subject;
    this.bus = host.events;
    this.budgets = host.budgets;
  }

  observed(): boolean {
    return this.subject.observed || this.bus.observed;
  }

  emit(raw: TrellisEvent): void {
    const event = redactEvent(raw);
    if (this.subject.observed) this.subject.next(event);
    this.bus.emit(event);
  }
}

/**
 * The envelope every turn runs in, new or resumed: `turn.started`; the body, then `after`
 * with what it came to; on a throw of either a failed or cancelled end; `task.end` whenever
 * `task.start` was attempted (it always runs, even when `task.start` itself threw); one
 * checkpoint; `turn.finished`. `after` is a plain function, not a closure, and runs in the
 * envelope's own `then`: a turn waits in one promise here, not in one per step.
 */
export function inTurnEnvelope<T>(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  body: () => Promise<T>,
  after: (parts: SessionParts, env: TurnEnv, meta: TurnMeta, reached: T) => TurnEnd | Promise<TurnEnd>,
): Promise<TurnResult> {
  const began = performance.now();
  const saved = parts.state.session.values;
  if (env.observed()) {
    const frame = parts.delegation;
    // A sub-agent's turn names the call it runs for, so traces nest it under that call.
    const recovered = meta.recovered === true ? { recovered: true as const } : undefined;
    env.emit(
      frame
        ? {
            type: 'turn.started',
            sessionId: parts.id,
            turn: meta.turnIndex,
            agent: parts.agent.spec.name,
            parent: { sessionId: frame.parentSessionId, callId: frame.parentCallId },
            ...recovered,
          }
        : { type: 'turn.started', sessionId: parts.id, turn: meta.turnIndex, ...recovered },
    );
  }
  let running: Promise<T>;
  try {
    running = body();
  } catch (error) {
    running = Promise.reject(error);
  }
  const failed = (error: unknown) => {
    // The step journal could not be written (the store failed, or another writer holds the
    // session now): the turn stops here and is left in the store as far as it was journalled,
    // for whoever goes on with it. Nothing more is written, not even a failed turn's record.
    const broken = parts.sync.broken;
    if (broken !== undefined) return unsaved(env, meta, broken);
    return settleTurn(
      parts,
      env,
      meta,
      failedTurn(parts, error, meta.runner ?? bareRunner(parts, env, meta), saved, env.stopper, env.site.signal),
      began,
    );
  };
  // Continued by `then`, not awaited: no suspended frame of the envelope is held while the turn runs.
  return running.then((reached) => {
    let end: TurnEnd | Promise<TurnEnd>;
    try {
      end = after(parts, env, meta, reached);
    } catch (error) {
      return failed(error);
    }
    if (end instanceof Promise) return end.then((ended) => settleTurn(parts, env, meta, ended, began), failed);
    return settleTurn(parts, env, meta, end, began);
  }, failed);
}

/** `after` for a body that ends the turn itself. */
export function asEnded(_parts: SessionParts, _env: TurnEnv, _meta: TurnMeta, end: TurnEnd): TurnEnd {
  return end;
}

const NO_HISTORY: readonly never[] = [];

/** A runner for a turn that failed before it had one: only its (empty) result is read. */
function bareRunner(parts: SessionParts, env: TurnEnv, meta: TurnMeta): TurnRunner {
  return new TurnRunner(env, parts.agent.limits, meta.taskInput, '', NO_HISTORY, meta.startedAt);
}

/**
 * After the body: `task.end` when `task.start` was attempted, the checkpoint, `turn.finished`.
 * Synchronous while no handler and no store awaits.
 */
function settleTurn(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  end: TurnEnd,
  began: number,
): TurnResult | Promise<TurnResult> {
  if (meta.taskStarted) {
    const ended = endTask(env, meta.taskInput, end);
    if (ended instanceof Promise) return ended.then((after) => saveTurn(parts, env, meta, after, began));
    end = ended;
  }
  return saveTurn(parts, env, meta, end, began);
}

function saveTurn(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  ended: TurnEnd,
  began: number,
): TurnResult | Promise<TurnResult> {
  const end = withFinalSpend(ended, env);
  // The turn's last write: it may end the turn's lease too (`SessionSync.holding`).
  const saving = parts.sync.checkpoint(
    meta.turnIndex,
    meta.input,
    end,
    meta.startedAt,
    parts.state.session.values,
    meta.keepsLease !== true,
    meta.key,
  );
  if (saving instanceof Promise) return saving.then(() => turnFinished(parts, env, meta, end, began));
  return turnFinished(parts, env, meta, end, began);
}

/** The plugins and owners that spent something in a turn, for `turn.finished` (the agent's own and unattributed spend left out). */
function spentBy(usage: TurnResult['usage']): { plugins?: string[]; owners?: string[] } {
  const plugins = Object.keys(usage.byPlugin ?? {}).filter((name) => !name.startsWith('('));
  if (plugins.length === 0) return {};
  const owners = Object.keys(usage.byOwner ?? {}).filter((name) => !name.startsWith('('));
  return { plugins, ...(owners.length > 0 && { owners }) };
}

/** The result and suspension with the hook time of hooks that ran after the result was built (`message.sending`, `task.end`). */
function withFinalSpend(end: TurnEnd, env: TurnEnv): TurnEnd {
  const hookMs = env.site.spend.hookMs;
  const owners = env.registry.byName;
  const usage = withHookMs(end.result.usage, hookMs, (plugin) => owners.get(plugin)?.definition.owner);
  if (usage === end.result.usage && end.suspension === undefined) return end;
  return {
    ...end,
    result: { ...end.result, usage },
    ...(end.suspension !== undefined && { suspension: { ...end.suspension, hookMs: { ...hookMs } } }),
  };
}

function turnFinished(parts: SessionParts, env: TurnEnv, meta: TurnMeta, end: TurnEnd, began: number): TurnResult {
  if (env.observed())
    env.emit({
      type: 'turn.finished',
      sessionId: parts.id,
      turn: meta.turnIndex,
      status: end.result.status,
      durationMs: performance.now() - began,
      ...spentBy(end.result.usage),
    });
  return end.result;
}

/**
 * `message.sending` may rewrite or cancel the reply; then `memory.write` sees the exchange.
 * Synchronous while no handler awaits.
 */
export function finishReply(
  parts: SessionParts,
  env: TurnEnv,
  runner: TurnRunner,
  end: TurnEnd,
): TurnEnd | Promise<TurnEnd> {
  if (end.result.status !== 'completed' || end.result.reply === undefined) return end;
  const sending = env.hooks.run('message.sending', end.result.reply, env.site);
  if (sending instanceof Promise) return sending.then((reply) => replied(parts, env, runner, end, reply));
  return replied(parts, env, runner, end, sending);
}

function replied(
  parts: SessionParts,
  env: TurnEnv,
  runner: TurnRunner,
  end: TurnEnd,
  sending: HookOutcome<'message.sending'>,
): TurnEnd | Promise<TurnEnd> {
  if (isStop(sending)) {
    // Like any cancelled turn, nothing is appended: the model must not see a reply the user never got.
    return {
      result: runner.result('cancelled', undefined, { code: 'ReplyCancelled', message: sending.reason }),
      append: [],
      suspension: undefined,
    };
  }
  const reply = sending;
  let append = end.append;
  if (reply !== end.result.reply) {
    // The transcript keeps what the user was actually sent.
    append = [...append.slice(0, -1), { role: 'assistant', content: reply }];
  }
  let result: TurnResult = { ...end.result, reply };
  if (reply !== end.result.reply && end.result.output !== undefined && runner.output !== undefined) {
    // A typed answer is what its reply says: a rewritten reply (a redaction) is read again.
    const checked = runner.output.check(reply);
    if (!checked.ok) {
      const failure = runner.output.failure(checked.errors);
      return {
        result: runner.result('failed', undefined, {
          code: failure.code,
          message: `message.sending rewrote the answer; ${failure.message}`,
        }),
        append: [],
        suspension: undefined,
      };
    }
    result = { ...result, output: checked.value };
  }
  if (parts.agent.limits.streamText === 'final' && env.observed())
    env.emit({ type: 'model.delta', sessionId: parts.id, delta: { type: 'text', text: reply } });
  const finished: TurnEnd = { result, append, suspension: undefined };
  if (env.site.hooks['memory.write'].length === 0) return finished;
  return Promise.resolve(
    env.hooks.run('memory.write', { kind: 'exchange', input: runner.input, reply, status: 'completed' }, env.site),
  ).then(() => finished);
}

/** A turn whose journal broke: `task.end` still runs (it always does once `task.start` ran), then the store's error goes to the caller. */
async function unsaved(env: TurnEnv, meta: TurnMeta, error: unknown): Promise<never> {
  if (meta.taskStarted) {
    try {
      await env.hooks.run('task.end', { input: meta.taskInput, status: 'failed', reply: undefined }, env.site);
    } catch {
      // The store's error is what the caller must hear.
    }
  }
  throw error;
}

/** `task.end` always runs; if it throws, the turn fails. Synchronous when no handler awaits. */
function endTask(env: TurnEnv, input: string, end: TurnEnd): TurnEnd | Promise<TurnEnd> {
  let ending: unknown;
  try {
    ending = env.hooks.run('task.end', { input, status: end.result.status, reply: end.result.reply }, env.site);
  } catch (error) {
    return taskEndFailed(end, error);
  }
  if (ending instanceof Promise)
    return ending.then(
      () => end,
      (error: unknown) => taskEndFailed(end, error),
    );
  return end;
}

function taskEndFailed(end: TurnEnd, error: unknown): TurnEnd {
  if (end.result.status === 'failed') return end;
  return {
    result: { ...end.result, status: 'failed', reply: undefined, error: errorInfo(error) },
    append: [],
    suspension: undefined,
  };
}

/**
 * A cancelled turn leaves nothing half-written: session values go back to how they were,
 * and nothing joins the transcript — unless `session.cancel()` asked to keep its completed
 * steps (an interrupt): then its messages so far join the transcript, each tool call that
 * did not finish answered `Cancelled` (so the transcript stays one the model accepts), and
 * what its steps committed stays. A failed turn keeps what it committed (each commit was
 * whole), so charges for model calls that happened, or lessons from errors, are not lost
 * with it.
 */
function failedTurn(
  parts: SessionParts,
  error: unknown,
  runner: TurnRunner,
  saved: Readonly<Record<string, unknown>>,
  stopper: TurnStopper | undefined,
  signal: AbortSignal,
): TurnEnd {
  const isCancel =
    TrellisError.is(error, 'Cancelled') ||
    (error instanceof Error && error.name === 'AbortError') ||
    (stopper !== undefined && stopper.signal.aborted);
  const keep = isCancel && stopper !== undefined && stopper.signal.aborted && stopper.keepsSteps;
  if (isCancel && !keep) parts.state.restore(saved);
  else if (!isCancel) parts.host.reportError(error, undefined, undefined, parts.id);
  // A turn cut by its deadline says so; any other cancel is the caller's.
  const reason: unknown = stopper?.signal.aborted ? stopper.signal.reason : signal.aborted ? signal.reason : undefined;
  const cancel = isDeadline(reason) ? reason : cancelled();
  return {
    result: runner.result(isCancel ? 'cancelled' : 'failed', undefined, errorInfo(isCancel ? cancel : error)),
    append: keep ? keptSteps(runner.messages) : [],
    suspension: undefined,
  };
}

/** A cut-off turn's messages with every tool call its last model reply asked for answered. */
function keptSteps(messages: readonly ChatMessage[]): ChatMessage[] {
  const kept = [...messages];
  let last = kept.length - 1;
  while (last >= 0 && kept[last]!.role === 'tool') last--;
  const asked = last >= 0 ? kept[last]!.toolCalls : undefined;
  if (asked === undefined) return kept;
  const answered = new Set(kept.slice(last + 1).map((m) => m.toolCallId));
  for (const call of asked) {
    if (answered.has(call.id)) continue;
    kept.push({
      role: 'tool',
      toolCallId: call.id,
      name: call.name,
      content: toolMessage({
        ok: false,
        error: { code: 'Cancelled', message: 'Not finished: the turn was cancelled', retryable: false },
      }),
    });
  }
  return kept;
}

const DEADLINE = Symbol('trellis.turn-deadline');

/** The caller's signal, aborted too when the turn's deadline (`AgentSpec.turnTimeoutMs`) passes. */
function withDeadline(given: AbortSignal | undefined, ms: number): AbortSignal {
  const controller = new AbortController();
  const reason = deadlineError(ms);
  const timer = setTimeout(() => controller.abort(reason), ms);
  timer.unref();
  controller.signal.addEventListener('abort', () => clearTimeout(timer), { once: true });
  return given === undefined ? controller.signal : AbortSignal.any([given, controller.signal]);
}

/** The reason a turn past its deadline is cancelled with. */
function deadlineError(ms: number): TrellisError {
  return Object.assign(
    new TrellisError('Cancelled', `The turn passed its deadline of ${ms} ms (turnTimeoutMs) and was cancelled`, {
      hint: 'Raise turnTimeoutMs in the agent spec if turns are meant to run that long, or check the model endpoint (a stalled stream) and the tools',
      details: { turnTimeoutMs: ms },
    }),
    { [DEADLINE]: true },
  );
}

function isDeadline(reason: unknown): reason is TrellisError {
  return typeof reason === 'object' && reason !== null && Object.prototype.hasOwnProperty.call(reason, DEADLINE);
}
