import type { DelegationFrame } from '../../contract/delegation.js';
import type { TurnEnv } from '../../tools/turn-env.js';
import type { AgentSpec } from '../agent-spec.js';
import type { SessionHost } from '../session-host.js';

/** What the delegation tools of one turn need besides the turn itself. */
export interface DelegationSite {
  readonly host: SessionHost;
  /** The agent running the turn. */
  readonly spec: AgentSpec;
}

/** The agents from the top-level one down to the one running `env`. */
export function pathOf(env: TurnEnv, self: string): readonly string[] {
  return env.delegation?.path ?? [self];
}

/** Where a sub-agent's turn for this call sits. */
export function childFrame(env: TurnEnv, self: string, callId: string, agent: string): DelegationFrame {
  return { path: [...pathOf(env, self), agent], parentSessionId: env.sessionId, parentCallId: callId };
}
