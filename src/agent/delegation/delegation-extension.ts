import type { AgentSpec } from '../agent-spec.js';
import type { TurnExtension } from '../turn/turn-envelope.js';
import { withDelegationTools } from './delegation-tools.js';
import { handingOver, historyFor } from './handoff-continuation.js';
import { rollUpUsage } from './usage-rollup.js';

/**
 * Delegation as a turn extension: the agent's agent tools and handoff tools in the turn's
 * view, the handoff's `history` filter, the turn going on with the agent it was handed to,
 * and sub-agents' usage rolled up into the turn's. A session plugs it into its turns only
 * when its agent delegates or the session was handed over ({@link delegationFor}).
 */
export const DELEGATION: TurnExtension = {
  extendEnv: (env, parts) => withDelegationTools(env, { host: parts.host, spec: parts.agent.spec }),
  history: historyFor,
  handOver: handingOver,
  rollUpUsage,
};

/** Whether an agent delegates: it may call sub-agents (`agents`) or hand the conversation over (`handoffs`). */
export function delegates(spec: AgentSpec): boolean {
  return (spec.agents?.length ?? 0) > 0 || (spec.handoffs?.length ?? 0) > 0;
}

/**
 * The extension a session's turn runs with: delegation when the agent delegates or the
 * session has an active agent a handoff gave it (its `history` filter and the usage of the
 * agents before it still apply), else none.
 */
export function delegationFor(spec: AgentSpec, handedOver: boolean): TurnExtension | undefined {
  return handedOver || delegates(spec) ? DELEGATION : undefined;
}
