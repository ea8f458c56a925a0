import type { EventBus } from '../events/event-bus.js';
import type { HookEngine } from '../hooks/hook-engine.js';
import type { RegistrySnapshot } from '../plugin/registry-snapshot.js';
import type { SessionState } from '../state/session-state.js';
import type { StateEngine } from '../state/state-engine.js';
import type { SessionStore } from '../stores/session-store.js';
import type { AgentSpec } from './agent-spec.js';
import type { TurnLimits } from './turn-runner.js';

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
  /** Reports an error on the event stream without throwing. */
  reportError(error: unknown, plugin?: string, point?: string, sessionId?: string): void;
}

/** What a session knows of the agent that opened it. */
export interface AgentBinding {
  readonly spec: AgentSpec;
  readonly limits: TurnLimits;
  /** Called when a session ends, so the agent stops handing it out. */
  forget(sessionId: string): void;
}
