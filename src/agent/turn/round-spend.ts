import { describeError } from '../../errors/describe-error.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { RoundCause } from '../../engine/events/trellis-event.js';
import type { ModelResponse } from '../../contract/model-provider.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import type { FinishedCalls } from './finished-calls.js';
import { AGENT_ITSELF } from './usage-attribution.js';

/** The causes of a round no tool led to. */
const AGENT_ONLY: readonly string[] = Object.freeze([AGENT_ITSELF]);

/**
 * The plugins whose tools ran in the round before `round` (one entry per call): what its
 * model call was asked to read, so its tokens and time are theirs. `(agent)` alone when no tool ran.
 */
export function roundCauses(env: TurnEnv, finished: FinishedCalls, round: number): readonly string[] {
  const tools = env.registry.tools;
  const causes = finished.toolsOfRound(round - 1).map((tool) => tools.get(tool)?.plugin ?? AGENT_ITSELF);
  return causes.length > 0 ? causes : AGENT_ONLY;
}

/**
 * A model call's spend: into the turn's running spend (per-turn budgets read it), and towards
 * its causes' `tokens` and `cost` windows when a budget counts them (then a promise to await).
 * A counter that fails (Redis or the store down) does not fail the turn, whose model call
 * happened: an `error` event says so, and the next tool call of those plugins, which reads the
 * same counter, is refused with that error.
 */
export function spendRound(
  env: TurnEnv,
  causes: readonly string[],
  response: ModelResponse,
  ms: number,
): Promise<void> | undefined {
  env.site.spend.addModel(causes, response.usage.totalTokens, ms);
  const budgets = env.budgets;
  if (budgets === undefined || !budgets.countsModel) return undefined;
  return budgets
    .spentModel(causes, (plugin) => ownerOf(env, plugin), response.usage, response.model)
    .catch((error: unknown) => {
      env.emit({
        type: 'error',
        code: TrellisError.is(error) ? error.code : 'StoreUnavailable',
        message: `A model call's tokens could not be counted towards the budgets of ${[...new Set(causes)].join(', ')}: ${describeError(error)}`,
        sessionId: env.sessionId,
      });
    });
}

/** What `round.finished` says of whom a round's tokens are attributed to: each plugin with its share and owner (nothing for the agent's own rounds). */
export function causedBy(env: TurnEnv, causes: readonly string[]): { causes?: RoundCause[] } {
  if (causes === AGENT_ONLY) return {};
  const shares = new Map<string, number>();
  for (const plugin of causes) shares.set(plugin, (shares.get(plugin) ?? 0) + 1 / causes.length);
  return {
    causes: [...shares].map(([plugin, share]) => {
      const owner = ownerOf(env, plugin);
      return { plugin, share, ...(owner !== undefined && { owner }) };
    }),
  };
}

function ownerOf(env: TurnEnv, plugin: string): string | undefined {
  return env.registry.byName.get(plugin)?.definition.owner;
}
