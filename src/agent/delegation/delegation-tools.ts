import { TrellisError } from '../../errors/trellis-error.js';
import type { ActiveView } from '../../engine/plugin/registry-snapshot.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { agentTool } from './agent-tool.js';
import type { DelegationSite } from './delegation-site.js';
import { handoffTool } from './handoff-tool.js';

/**
 * The turn's environment with the agent's delegation tools added to its view: one tool per
 * sub-agent it may call (`agents`) and per agent it may hand over to (`handoffs`). An agent
 * with neither gets `env` back unchanged, so turns without delegation pay nothing.
 *
 * @throws TrellisError `InvalidOptions` when a delegation tool is named like a plugin's tool.
 */
export function withDelegationTools(env: TurnEnv, site: DelegationSite): TurnEnv {
  const agents = site.spec.agents ?? [];
  const handoffs = site.spec.handoffs ?? [];
  if (agents.length === 0 && handoffs.length === 0) return env;
  // The tools call back into the turn they run in: the env built below.
  const current = () => extended;
  const extra: RegisteredTool[] = [
    ...agents.map((spec) => agentTool(current, site, spec)),
    ...handoffs.map((spec) => handoffTool(current, site, spec)),
  ];
  for (const tool of extra) {
    if (env.view.toolsByName.has(tool.name) || extra.filter((t) => t.name === tool.name).length > 1) {
      throw new TrellisError(
        'InvalidOptions',
        `Agent '${site.spec.name}' offers a delegation tool named '${tool.name}', but that name is taken by ${env.view.toolsByName.get(tool.name)?.plugin ?? 'another delegation tool'}`,
        {
          hint: 'Give the agent tool or handoff another name',
        },
      );
    }
  }
  const tools = [...env.view.tools, ...extra];
  const view: ActiveView = {
    hooks: env.view.hooks,
    transforms: env.view.transforms,
    missing: env.view.missing,
    tools,
    toolsByName: new Map(tools.map((t) => [t.name, t] as const)),
  };
  // A copy with the same prototype: an env whose `observed`/`emit` are methods keeps them.
  const extended = Object.assign(Object.create(Object.getPrototypeOf(env) as object) as TurnEnv, env, { view });
  return extended;
}
