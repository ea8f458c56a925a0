import type { DelegationFrame } from '../../contract/delegation.js';
import type { TrellisEvent } from '../events/trellis-event.js';
import type { HookEngine, HookSite } from '../hooks/hook-engine.js';
import type { ActiveView, RegistrySnapshot } from '../plugin/registry-snapshot.js';
import type { StateEngine } from '../state/state-engine.js';
import type { CallResultEnd } from './call-end.js';
import type { TurnStopper } from '../context/turn-stopper.js';
import type { BudgetGuard } from '../budgets/budgets.js';
import type { TurnSpend } from '../../contract/turn-spend.js';

/** What one running turn carries: the registry snapshot it started with and its scope. */
export interface TurnEnv {
  readonly hooks: HookEngine;
  readonly state: StateEngine;
  readonly registry: RegistrySnapshot;
  readonly view: ActiveView;
  /** The turn's scope (session + turn level), schema, active hooks, cancellation signal and spend (hook time by plugin). */
  readonly site: HookSite & { readonly signal: AbortSignal; readonly spend: TurnSpend };
  /**
   * How the turn is stopped (`session.cancel()`, the caller's signal): its signal goes to the
   * model call and is checked at step boundaries. Absent for work outside a turn (a direct
   * tool call), which stops on `site.signal` alone.
   */
  readonly stopper?: TurnStopper;
  readonly sessionId: string;
  readonly turnIndex: number;
  /** The agent's cap on the characters of one tool result the model reads (`AgentSpec.maxToolResultChars`). */
  readonly maxToolResultChars?: number;
  /** The name of the agent running the turn. */
  readonly agent?: string;
  /** Set when this turn runs a sub-agent for another agent's call. */
  readonly delegation?: DelegationFrame;
  /** The turn's step journal, when its store keeps one (durable steps, docs/durable-steps.md); absent otherwise. */
  readonly steps?: CallSteps;
  /** The app's budgets (`TrellisOptions.budgets`), checked before each tool call of a plugin they limit. */
  readonly budgets?: BudgetGuard;
  /** Whether anybody listens to events, checked before building one. */
  observed(): boolean;
  emit(event: TrellisEvent): void;
}

/** Where one call sits in its turn: the round (model call) that asked for it and its place in that response. */
export interface CallPlace {
  readonly round: number;
  /** The call's index among the tool calls of its round's response; -1 for a call outside a model turn. */
  readonly position: number;
  readonly callId: string;
}

/** What the step journal knew about a call when a turn cut off by a crash is replayed. */
export type ReplayedCall =
  /** It finished: its result is used and it does not run again. */
  | { readonly kind: 'finished'; readonly end: CallResultEnd }
  /** It started and left no result: it is in doubt. */
  | { readonly kind: 'started' };

/**
 * What the tool-call path asks of the turn's step journal (implemented by the turn, in
 * `src/agent/durability/turn-journal.ts`): the calls' progress is journalled as it happens, so a turn
 * cut off by a crash goes on without running a finished call again.
 */
export interface CallSteps {
  /** During a replay: how the call at this place went before the crash; undefined when it had not started. */
  replayed(place: CallPlace): ReplayedCall | undefined;
  /**
   * Just before the tool's middleware and the tool run: checks that this turn still holds
   * its session (a worker whose lease lapsed must not run a tool), and journals the start of
   * a call whose tool is not retried after a crash (`ask`), so that a crash leaves it in
   * doubt rather than unknown. Undefined when there is nothing to wait for.
   */
  beforeInvoke(place: CallPlace, onCrash: 'retry' | 'ask'): Promise<void> | undefined;
  /** Journals a finished call (its record, what the model reads, the state it left); settles once durable. */
  finished(place: CallPlace, end: CallResultEnd): Promise<void>;
}
