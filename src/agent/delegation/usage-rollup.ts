import type { RolledUpUsage } from '../../contract/agent-usage.js';
import type { ToolCallRecord } from '../../contract/tool-result.js';
import type { Usage } from '../../models/model-provider.js';
import type { TurnUsage } from '../turn-result.js';

/**
 * A turn's usage with its sub-agents' added: totals and `byModel` include every sub-agent's
 * model calls, and `byAgent` says who spent what. A turn that delegated nothing keeps its
 * usage as it was (no `byAgent`).
 */
export function rollUpUsage(own: TurnUsage, calls: readonly ToolCallRecord[], agent: string | undefined): TurnUsage {
  let delegated = false;
  for (const call of calls) if (call.usage) delegated = true;
  if (!delegated) return own;
  const byModel: Record<string, Usage> = { ...own.byModel };
  const byAgent: Record<string, Usage> = { [agent ?? 'agent']: plain(own) };
  let total: Usage = plain(own);
  for (const call of calls) {
    if (!call.usage) continue;
    total = add(total, call.usage);
    for (const [model, usage] of Object.entries(call.usage.byModel)) byModel[model] = add(byModel[model], usage);
    for (const [name, usage] of Object.entries(call.usage.byAgent)) byAgent[name] = add(byAgent[name], usage);
  }
  return { ...total, byModel, byAgent };
}

/** A sub-agent's turn usage as its caller records it: `byAgent` always set. */
export function asDelegatedUsage(usage: TurnUsage, agent: string): RolledUpUsage {
  return { ...plain(usage), byModel: usage.byModel, byAgent: usage.byAgent ?? { [agent]: plain(usage) } };
}

function plain(u: Usage): Usage {
  return { inputTokens: u.inputTokens, outputTokens: u.outputTokens, totalTokens: u.totalTokens };
}

function add(a: Usage | undefined, b: Usage): Usage {
  if (!a) return plain(b);
  return { inputTokens: a.inputTokens + b.inputTokens, outputTokens: a.outputTokens + b.outputTokens, totalTokens: a.totalTokens + b.totalTokens };
}
