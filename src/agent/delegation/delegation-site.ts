import type { DelegationFrame } from '../../contract/delegation.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import type { AgentSpec } from '../agent-spec.js';
import type { SessionHost } from '../session-host.js';
import { DEFAULT_MAX_DELEGATION_DEPTH } from './agent-tool-spec.js';

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

/** Where a sub-agent's turn for this call sits, with the depth limit it inherits. */
export function childFrame(env: TurnEnv, site: DelegationSite, callId: string, agent: string): DelegationFrame {
  const self = site.spec.name;
  return {
    path: [...pathOf(env, self), agent],
    parentSessionId: env.sessionId,
    parentCallId: callId,
    depthLimit: depthLimitOf(env, site),
  };
}

/**
 * The depth limit of a delegation from this turn: the smallest `maxDelegationDepth` along
 * the path, this agent's included (each agent's own, or the default), and the agent that set it.
 */
export function depthLimitOf(env: TurnEnv, site: DelegationSite): { readonly agent: string; readonly max: number } {
  const own = { agent: site.spec.name, max: site.spec.maxDelegationDepth ?? DEFAULT_MAX_DELEGATION_DEPTH };
  const above = env.delegation?.depthLimit;
  return above !== undefined && above.max < own.max ? above : own;
}
