import type { EventBus } from '../engine/events/event-bus.js';
import type { HookEngine } from '../engine/hooks/hook-engine.js';
import type { RegistrySnapshot } from '../engine/plugin/registry-snapshot.js';
import type { SessionState } from '../engine/state/session-state.js';
import type { StateEngine } from '../engine/state/state-engine.js';
import type { SessionStore } from '../engine/stores/session-store.js';
import type { AgentSpec } from './agent-spec.js';
import type { DelegationFrame } from '../contract/delegation.js';
import type { PendingApproval } from '../contract/suspension.js';
import type { ChatMessage } from '../contract/model-provider.js';
import type { Decision, TurnResult } from './turn/turn-result.js';
import type { SessionRetention } from './open-sessions.js';
import type { TurnLimits } from './turn/turn-runner.js';
import type { OutputClass, OutputSpec } from './turn/turn-output.js';
import type { CompiledPolicy } from './approval/approval-policy.js';
import type { BudgetGuard } from '../engine/budgets/budgets.js';

/**
 * The port agents and sessions run on: exactly what a turn needs from the kernel, and
 * nothing else. `Trellis` implements it privately; no host, plugin or session gets the
 * app itself.
 */
export interface SessionHost {
  /** The installed plugins now; a turn keeps the snapshot it started with. */
  readonly registry: RegistrySnapshot;
  readonly hooks: HookEngine;
  readonly state: StateEngine;
  readonly events: EventBus;
  readonly store: SessionStore | undefined;
  /** The live state of a session, created on first use. */
  sessionState(sessionId: string): SessionState;
  /** Forgets a session's live state (the store keeps what was checkpointed). */
  releaseSession(sessionId: string): void;
  /** How many sessions agents keep open, and how long idle ones stay. */
  readonly retention?: SessionRetention;
  /** How long a session lease lasts without renewal (`TrellisOptions.leaseTtlMs`); default 30 s. */
  readonly leaseTtlMs?: number;
  /** The app's budgets (`TrellisOptions.budgets`), when set. */
  readonly budgets?: BudgetGuard;
  /** The app's approval policies (`TrellisOptions.approvals`), checked; none when absent. */
  readonly approvals?: readonly CompiledPolicy[];
  /** The app's agent of that name (the latest `app.agent({ name })`), for delegation. */
  agent?(name: string): DelegateAgent | undefined;
  /** Reports an error on the event stream without throwing. */
  reportError(error: unknown, plugin?: string, point?: string, sessionId?: string): void;
}

/** What a session knows of the agent that opened it. */
export interface AgentBinding {
  readonly spec: AgentSpec;
  readonly limits: TurnLimits;
  /** The spec's `output` DTO, checked at `app.agent()`. */
  readonly output?: OutputSpec;
  /** Called when a session ends, so the agent stops handing it out. */
  forget(sessionId: string): void;
}

/** How a delegation runs a sub-agent's turn: the caller's signal and where it sits. */
export interface DelegatedRun {
  readonly signal?: AbortSignal;
  /** The typed answer the caller needs of the sub-agent (an agent tool's `output`). */
  readonly output?: OutputClass<object>;
  readonly delegation: DelegationFrame;
  /** Wait this long for the child session's lease (a crashed process's lease runs out by itself). */
  readonly waitForLease?: number;
  /**
   * The caller's call's idempotency key: the child's turn is keyed by it, so a caller that goes
   * on after a crash and runs the call again gets the child's turn that ran (or goes on with it).
   */
  readonly key?: string;
}

/** The part of a session a delegation drives: a child session of a sub-agent. */
export interface DelegateSession {
  readonly transcript: readonly ChatMessage[];
  send(message: string, options: DelegatedRun): Promise<TurnResult>;
  resume(options: DelegatedRun & { readonly decisions: readonly Decision[] }): Promise<TurnResult>;
  pending(): Promise<readonly PendingApproval[]>;
  cancelPending(options?: { readonly waitForLease?: number }): Promise<boolean>;
}

/** The part of an agent a delegation needs: its spec, and its sessions. */
export interface DelegateAgent extends AgentBinding {
  session(id: string, options?: { readonly context?: Readonly<Record<string, unknown>> }): DelegateSession;
}
