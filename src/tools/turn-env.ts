import type { DelegationFrame } from '../contract/delegation.js';
import type { TrellisEvent } from '../events/trellis-event.js';
import type { HookEngine, HookSite } from '../hooks/hook-engine.js';
import type { ActiveView, RegistrySnapshot } from '../plugin/registry-snapshot.js';
import type { StateEngine } from '../state/state-engine.js';

/** What one running turn carries: the registry snapshot it started with and its scope. */
export interface TurnEnv {
  readonly hooks: HookEngine;
  readonly state: StateEngine;
  readonly registry: RegistrySnapshot;
  readonly view: ActiveView;
  /** The turn's scope (session + turn level), schema, active hooks and cancellation signal. */
  readonly site: HookSite & { readonly signal: AbortSignal };
  readonly sessionId: string;
  readonly turnIndex: number;
  /** The agent's cap on the characters of one tool result the model reads (`AgentSpec.maxToolResultChars`). */
  readonly maxToolResultChars?: number;
  /** The name of the agent running the turn. */
  readonly agent?: string;
  /** Set when this turn runs a sub-agent for another agent's call. */
  readonly delegation?: DelegationFrame;
  /** Whether anybody listens to events, checked before building one. */
  observed(): boolean;
  emit(event: TrellisEvent): void;
}
