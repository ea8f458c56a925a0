import type { RolledUpUsage } from '../../contract/agent-usage.js';
import type { ToolCallRecord } from '../../contract/tool-result.js';
import type { Usage } from '../../contract/model-provider.js';
import { addUsage, plainUsage, subtractUsage } from '../../engine/models/usage-sum.js';
import type { TurnUsage } from '../turn/turn-result.js';

/**
 * A turn's usage with its sub-agents' added: totals and `byModel` include every sub-agent's
 * model calls, and `byAgent` says who spent what. A turn that delegated nothing keeps its
 * usage as it was (no `byAgent`).
 */
export function rollUpUsage(
  own: TurnUsage,
  calls: readonly ToolCallRecord[],
  agent: string | undefined,
  handedOver: Readonly<Record<string, Usage>> = {},
): TurnUsage {
  let delegated = false;
  for (const call of calls) if (call.usage) delegated = true;
  const earlier = Object.entries(handedOver);
  if (!delegated && earlier.length === 0) return own;
  const byModel: Record<string, Usage> = { ...own.byModel };
  // The turn's own model calls, less those of agents that handed it over, are the current agent's.
  let current = plain(own);
  for (const [, usage] of earlier) current = subtract(current, usage);
  const byAgent: Record<string, Usage> = {};
  for (const [name, usage] of earlier) byAgent[name] = usage;
  byAgent[agent ?? 'agent'] = add(byAgent[agent ?? 'agent'], current);
  let total: Usage = plain(own);
  for (const call of calls) {
    if (!call.usage) continue;
    total = add(total, call.usage);
    for (const [model, usage] of Object.entries(call.usage.byModel)) byModel[model] = add(byModel[model], usage);
    for (const [name, usage] of Object.entries(call.usage.byAgent)) byAgent[name] = add(byAgent[name], usage);
  }
  return { ...total, byModel, byAgent };
}

/** The per-agent usage before a handoff: what the turn used so far, less earlier agents' share, is `agent`'s. */
export function handedOverUsage(
  earlier: Readonly<Record<string, Usage>>,
  total: Usage,
  agent: string | undefined,
): Record<string, Usage> {
  let own = plain(total);
  for (const usage of Object.values(earlier)) own = subtract(own, usage);
  const name = agent ?? 'agent';
  return { ...earlier, [name]: add(earlier[name], own) };
}

/** A sub-agent's turn usage as its caller records it: `byAgent` always set. */
export function asDelegatedUsage(usage: TurnUsage, agent: string): RolledUpUsage {
  return { ...plain(usage), byModel: usage.byModel, byAgent: usage.byAgent ?? { [agent]: plain(usage) } };
}

const plain = plainUsage;
const add = addUsage;
const subtract = subtractUsage;
