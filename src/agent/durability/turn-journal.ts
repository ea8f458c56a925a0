import type { ContextScope } from '../../engine/state/context-scope.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { ModelResponse } from '../../contract/model-provider.js';
import type { RegistrySnapshot } from '../../engine/plugin/registry-snapshot.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import type { CallResultEnd } from '../../engine/tools/call-end.js';
import type { CallPlace, CallSteps, ReplayedCall } from '../../engine/tools/turn-env.js';
import { isHostKey } from './suspension-record.js';
import { persistentValues } from './turn-record.js';
import { STEPS_VERSION, type OpenStep, type StateDelta, type TurnStep, type ValuesDelta } from './turn-steps.js';

type Values = Readonly<Record<string, unknown>>;

/** What the journal knows of the calls of the round a crash cut off (see {@link TurnJournal.replayRound}). */
export interface RoundReplay {
  readonly round: number;
  readonly results: ReadonlyMap<number, CallResultEnd>;
  readonly started: ReadonlySet<number>;
}

/** The parts of a turn an opening step records (a runner's progress and where the turn came from). */
export interface TurnOpening {
  readonly turn: number;
  readonly key: string;
  readonly resumedBy?: string;
  readonly agent: string;
  readonly input: string;
  readonly taskInput: string;
  readonly startedAt: string;
  readonly instructions: string;
  readonly rounds: number;
  readonly messages: OpenStep['messages'];
  readonly toolCalls: OpenStep['toolCalls'];
  readonly usage: OpenStep['usage'];
  readonly roundUsage?: OpenStep['roundUsage'];
  readonly handedOver?: OpenStep['handedOver'];
  readonly done?: string;
}

const NO_KEYS: readonly string[] = [];

/** Where a journal writes: the session's store sync (`SessionSync`), which orders its writes and fences them. */
export interface StepWriter {
  appendSteps(steps: readonly unknown[]): Promise<void>;
  ensureLease(): Promise<void> | undefined;
  /** Set once a write failed; a journal that retries a write clears it. */
  broken: unknown;
}

/**
 * The step journal of one running turn (docs/durable-steps.md): each model response and each tool
 * result is written to the store as it completes, with the state it left (as changes), before
 * the turn's next step starts. A turn cut off by a crash is rebuilt from it (`recovered-turn.ts`)
 * and goes on from the first step that did not complete. The opening step waits to be written
 * with the first step after it, so a turn costs no write of its own before its first model call.
 */
export class TurnJournal implements CallSteps {
  /** Until the journal is opened (a resumed turn's decided calls run first, journalled in its suspension record), it writes nothing. */
  #opened = false;
  #open: OpenStep | undefined;
  /** The values last journalled, as the level held them (to see cheaply that nothing changed) and as written. */
  #sessionLevel: Values | undefined;
  #session: Values = {};
  #turnLevel: Values | undefined;
  #turn: Values = {};
  #replay: RoundReplay | undefined;
  /** The message as the turn's first opening had it (an opening after a handoff keeps it). */
  #input: string | undefined;

  constructor(
    private readonly sync: StepWriter,
    private readonly scope: ContextScope,
    private readonly registry: RegistrySnapshot,
    /** The names of the tools of the turn's view (`<tool>.result` keys are rebuilt from results, not journalled). */
    private readonly tools: ReadonlyMap<string, unknown>,
  ) {}

  /**
   * Opens (or opens again, after a handoff or a resume's decided calls) the journal: the turn
   * as it stands, written with the next step, or at once with `now`.
   */
  open(opening: TurnOpening, now = false): Promise<void> | undefined {
    const session = this.#sessionNow();
    const turn = this.#turnNow();
    this.#opened = true;
    this.#input ??= opening.input;
    this.#open = {
      k: 'open',
      v: STEPS_VERSION,
      turn: opening.turn,
      key: opening.key,
      ...(opening.resumedBy !== undefined && { resumedBy: opening.resumedBy }),
      agent: opening.agent,
      input: this.#input,
      taskInput: opening.taskInput,
      startedAt: opening.startedAt,
      instructions: opening.instructions,
      rounds: opening.rounds,
      messages: [...opening.messages],
      toolCalls: opening.toolCalls,
      usage: { ...opening.usage },
      ...(opening.roundUsage !== undefined &&
        Object.keys(opening.roundUsage).length > 0 && { roundUsage: { ...opening.roundUsage } }),
      ...(opening.handedOver !== undefined &&
        Object.keys(opening.handedOver).length > 0 && { handedOver: opening.handedOver }),
      ...(opening.done !== undefined && { done: opening.done }),
      session,
      turnValues: turn,
    };
    return now ? this.#write(undefined) : undefined;
  }

  /** Continues a journal rebuilt after a crash: changes are journalled from the state as it was rebuilt. */
  resume(replay: RoundReplay | undefined, input: string): void {
    this.#opened = true;
    this.#input = input;
    this.#sessionNow();
    this.#turnNow();
    this.#replay = replay;
  }

  /** A model response, as the model gave it, before `llm.after` and before any of its calls runs. */
  model(round: number, response: ModelResponse, offered: readonly string[] | undefined): Promise<void> {
    if (!this.#opened) return DONE;
    return this.#write({
      k: 'model',
      round,
      response: plainResponse(response),
      ...(offered !== undefined && { offered }),
    });
  }

  /** The response as `llm.after` left it (only where it has handlers). */
  after(round: number, response: ModelResponse): Promise<void> {
    if (!this.#opened) return DONE;
    return this.#write({ k: 'after', round, response: plainResponse(response) });
  }

  replayed(place: CallPlace): ReplayedCall | undefined {
    const replay = this.#replay;
    if (replay === undefined || replay.round !== place.round) return undefined;
    const end = replay.results.get(place.position);
    if (end !== undefined) return { kind: 'finished', end };
    return replay.started.has(place.position) ? STARTED : undefined;
  }

  beforeInvoke(place: CallPlace, onCrash: 'retry' | 'ask'): Promise<void> | undefined {
    // A call run again after a crash needs no mark: the same key whether it had started or not.
    // The mark's write is fenced by the store, which is as good as the lease check.
    if (!this.#opened || onCrash === 'retry' || place.position < 0) return this.sync.ensureLease();
    return this.#write({ k: 'start', round: place.round, at: place.position, id: place.callId }, false);
  }

  finished(place: CallPlace, end: CallResultEnd): Promise<void> {
    if (!this.#opened) return DONE;
    return this.#write({
      k: 'result',
      round: place.round,
      at: place.position,
      record: end.record,
      content: end.content,
      done: end.done,
    });
  }

  /** One append: the opening step if it waits, then `step` with the state it left (unless `withState` is false). */
  #write(step: TurnStep | undefined, withState = true): Promise<void> {
    const open = this.#open;
    this.#open = undefined;
    const written = step === undefined ? undefined : withState ? this.#withDelta(step) : step;
    const steps: unknown[] = open === undefined ? [written] : written === undefined ? [open] : [open, written];
    return this.sync.appendSteps(steps).catch((error: unknown) => {
      // A value a store cannot keep as JSON (a BigInt, a cycle) is kept as text rather than fail the turn.
      if (!TrellisError.is(error, 'InvalidCheckpoint') || this.sync.broken !== error) throw error;
      this.sync.broken = undefined;
      return this.sync.appendSteps(JSON.parse(JSON.stringify(steps, jsonSafe())) as unknown[]);
    });
  }

  #withDelta(step: TurnStep): TurnStep {
    const s = this.#sessionDelta();
    const t = this.#turnDelta();
    if (s === undefined && t === undefined) return step;
    const delta: StateDelta = { ...(s !== undefined && { s }), ...(t !== undefined && { t }) };
    return { ...step, ...delta };
  }

  #sessionNow(): Values {
    const level = this.scope.state.session.values;
    this.#sessionLevel = level;
    this.#session = persistentValues(level, this.registry);
    return this.#session;
  }

  #turnNow(): Values {
    const level = this.scope.turn!.values;
    this.#turnLevel = level;
    this.#turn = journalledTurnValues(level, this.tools);
    return this.#turn;
  }

  #sessionDelta(): ValuesDelta | undefined {
    // Values are replaced on every commit, never changed: the same object means no change.
    if (this.scope.state.session.values === this.#sessionLevel) return undefined;
    const before = this.#session;
    return diffValues(before, this.#sessionNow());
  }

  #turnDelta(): ValuesDelta | undefined {
    if (this.scope.turn!.values === this.#turnLevel) return undefined;
    const before = this.#turn;
    return diffValues(before, this.#turnNow());
  }
}

const STARTED: ReplayedCall = Object.freeze({ kind: 'started' });
const DONE: Promise<void> = Promise.resolve();

/**
 * Turn-level values as the journal keeps them: without host context (never stored), the
 * kernel's per-turn inputs, and the result records (`<tool>.result`, `trellis.last_tool_results`),
 * which a replay rebuilds from the journalled results.
 */
export function journalledTurnValues(values: Values, tools: ReadonlyMap<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const key in values) {
    if (!Object.prototype.hasOwnProperty.call(values, key)) continue;
    const value = values[key];
    if (
      value === undefined ||
      isHostKey(key) ||
      key === KERNEL_KEYS.turnInput ||
      key === KERNEL_KEYS.turnIndex ||
      key === KERNEL_KEYS.lastToolResults
    )
      continue;
    if (key.endsWith('.result') && tools.has(key.slice(0, -'.result'.length))) continue;
    define(out, key, value);
  }
  return out;
}

/** The keys whose value changed from `before` to `after` (by identity: values are never changed in place), and the keys gone. */
function diffValues(before: Values, after: Values): ValuesDelta | undefined {
  let set: Record<string, unknown> | undefined;
  let unset: string[] | undefined;
  for (const key in after) {
    if (
      Object.prototype.hasOwnProperty.call(after, key) &&
      (after[key] !== before[key] || !Object.prototype.hasOwnProperty.call(before, key))
    )
      define((set ??= {}), key, after[key]);
  }
  for (const key in before)
    if (Object.prototype.hasOwnProperty.call(before, key) && !Object.prototype.hasOwnProperty.call(after, key))
      (unset ??= []).push(key);
  if (set === undefined && unset === undefined) return undefined;
  return { ...(set !== undefined && { set }), ...(unset !== undefined && { unset }) };
}

/** Applies journalled changes to values (a copy). */
export function applyDelta(values: Values, delta: ValuesDelta | undefined): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const unset = delta?.unset ?? NO_KEYS;
  for (const key in values)
    if (Object.prototype.hasOwnProperty.call(values, key) && !unset.includes(key)) define(out, key, values[key]);
  const set = delta?.set;
  if (set !== undefined)
    for (const key in set) if (Object.prototype.hasOwnProperty.call(set, key)) define(out, key, set[key]);
  return out;
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // An own `__proto__` key stays a plain property.
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
}

/** The response's data only (a provider's object may carry more). */
function plainResponse(response: ModelResponse): ModelResponse {
  return {
    text: response.text,
    toolCalls: response.toolCalls.map((c) => ({ id: c.id, name: c.name, arguments: c.arguments })),
    usage: response.usage,
    model: response.model,
    ...(response.finishReason !== undefined && { finishReason: response.finishReason }),
    ...(response.refusal !== undefined && { refusal: response.refusal }),
  };
}

/** A replacer for values JSON cannot hold: BigInts as text, cycles cut. */
function jsonSafe(): (key: string, value: unknown) => unknown {
  const seen = new WeakSet<object>();
  return (_key, value) => {
    if (typeof value === 'bigint') return value.toString();
    if (typeof value === 'object' && value !== null) {
      if (seen.has(value)) return '[Circular]';
      seen.add(value);
    }
    return value;
  };
}
