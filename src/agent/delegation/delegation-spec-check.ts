import type { AgentSpec } from '../agent-spec.js';

/** What is wrong with an agent spec's `agents`, `handoffs` and `maxDelegationDepth`, one line each. */
export function delegationProblems(spec: AgentSpec | undefined): string[] {
  const problems: string[] = [];
  const text = (value: unknown) => typeof value === 'string' && value.length > 0;
  if (spec?.agents !== undefined) {
    if (!Array.isArray(spec.agents)) problems.push('agents must be a list of { agent, name, description }');
    else
      spec.agents.forEach((entry, index) => {
        if (!text(entry?.agent) || !text(entry?.name) || !text(entry?.description))
          problems.push(`agents[${index}] needs agent, name and description (non-empty strings)`);
        if (entry?.remote !== undefined && typeof (entry.remote as { ask?: unknown } | null)?.ask !== 'function')
          problems.push(
            `agents[${index}].remote must be a remote agent (an object with ask(), e.g. a2aAgent(…) from trellis/a2a)`,
          );
        if (entry?.context !== undefined && (!Array.isArray(entry.context) || !entry.context.every(text)))
          problems.push(`agents[${index}].context must be a list of context keys`);
      });
  }
  if (spec?.handoffs !== undefined) {
    if (!Array.isArray(spec.handoffs)) problems.push('handoffs must be a list of { agent }');
    else
      spec.handoffs.forEach(
        (entry, index) =>
          !text(entry?.agent) &&
          problems.push(`handoffs[${index}] needs agent (the name of the agent to hand over to)`),
      );
  }
  const depth = spec?.maxDelegationDepth;
  if (depth !== undefined && (!Number.isInteger(depth) || depth < 0))
    problems.push(`maxDelegationDepth must be a whole number ≥ 0, got ${String(depth)}`);
  return problems;
}
