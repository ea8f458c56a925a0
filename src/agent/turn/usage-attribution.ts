import type { AttributedUsage, UsageSplit } from '../../contract/agent-usage.js';
import type { ToolCallRecord } from '../../contract/tool-result.js';
import type { Usage } from '../../contract/model-provider.js';

export type { AttributedUsage, UsageSplit } from '../../contract/agent-usage.js';

/** The name `byPlugin` uses for model calls no plugin's tool led to: the first round, and rounds after no tool ran. */
export const AGENT_ITSELF = '(agent)';
/** Tokens of rounds whose split was not kept (a turn continued from a journal or suspension record written before the split was kept in it). */
export const UNATTRIBUTED = '(unattributed)';
/** The owner `byOwner` sums plugins without `@Plugin({ owner })` under. */
export const NO_OWNER = '(no owner)';

/** Who a plugin is, as attribution needs it: its name and owning team. */
export type PluginOf = (tool: string) => { readonly plugin: string; readonly owner?: string } | undefined;

/** What a turn measured besides its calls and rounds' usage: hook and transform time by plugin, model time by round. */
export interface TurnTimes {
  readonly hookMs?: Readonly<Record<string, number>>;
  readonly roundMs?: Readonly<Record<number, number>>;
  /** The owner of a plugin known by name (for plugins that spent only hook time). */
  readonly ownerOf?: (plugin: string) => string | undefined;
}

type Mutable<T> = { -readonly [K in keyof T]: T[K] };

const ZERO: AttributedUsage = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  toolMs: 0,
  toolCalls: 0,
  hookMs: 0,
  modelMs: 0,
});

/**
 * Splits a turn's spend by plugin and by owner. A tool call's time is its plugin's, and so is
 * the time of its hooks and transforms. A model call's tokens (and its wall time) are caused by
 * the tool results it reads: those of round N go to the plugins whose tools ran in round N − 1,
 * shared evenly per call; round 1, and a round after one without tool calls, is the agent's own
 * ({@link AGENT_ITSELF}). Tokens the turn counted but whose round is not known are
 * {@link UNATTRIBUTED}, so the parts add up to the total.
 */
export function attributeUsage(
  total: Usage,
  rounds: Readonly<Record<number, Usage>>,
  calls: readonly ToolCallRecord[],
  pluginOf: PluginOf,
  times: TurnTimes = {},
): UsageSplit {
  // Runs once per turn: each plugin's figures are summed in place, one object per plugin.
  const byPlugin: Record<string, Mutable<AttributedUsage>> = {};
  const owners = new Map<string, string | undefined>();
  const of = (name: string): Mutable<AttributedUsage> => (byPlugin[name] ??= { ...ZERO });
  const callsByRound = new Map<number, string[]>();
  for (const call of calls) {
    const who = pluginOf(call.tool);
    const name = who?.plugin ?? AGENT_ITSELF;
    owners.set(name, who?.owner);
    const u = of(name);
    u.toolMs += call.durationMs;
    u.toolCalls += 1;
    const names = callsByRound.get(call.round);
    if (names === undefined) callsByRound.set(call.round, [name]);
    else names.push(name);
  }
  let countedIn = 0;
  let countedOut = 0;
  let countedTotal = 0;
  for (const key of Object.keys(rounds)) {
    const usage = rounds[Number(key)];
    if (usage === undefined) continue;
    const causes = callsByRound.get(Number(key) - 1) ?? [AGENT_ITSELF];
    const share = 1 / causes.length;
    const ms = times.roundMs?.[Number(key)] ?? 0;
    for (const name of causes) {
      const u = of(name);
      u.inputTokens += usage.inputTokens * share;
      u.outputTokens += usage.outputTokens * share;
      u.totalTokens += usage.totalTokens * share;
      u.modelMs += ms * share;
    }
    countedIn += usage.inputTokens;
    countedOut += usage.outputTokens;
    countedTotal += usage.totalTokens;
  }
  const restIn = total.inputTokens - countedIn;
  const restOut = total.outputTokens - countedOut;
  const restTotal = total.totalTokens - countedTotal;
  if (restIn > 0 || restOut > 0 || restTotal > 0) {
    const u = of(UNATTRIBUTED);
    u.inputTokens += restIn;
    u.outputTokens += restOut;
    u.totalTokens += restTotal;
  }
  const hookMs = times.hookMs;
  if (hookMs !== undefined)
    for (const plugin of Object.keys(hookMs)) {
      if (!owners.has(plugin)) owners.set(plugin, times.ownerOf?.(plugin));
      of(plugin).hookMs += hookMs[plugin] ?? 0;
    }
  return { byPlugin, byOwner: byOwnerOf(byPlugin, (name) => owners.get(name)) };
}

/** `byPlugin` summed by owning team; the agent's own and unattributed spend keep their names. */
export function byOwnerOf(
  byPlugin: Readonly<Record<string, AttributedUsage>>,
  ownerOf: (plugin: string) => string | undefined,
): Record<string, AttributedUsage> {
  const byOwner: Record<string, AttributedUsage> = {};
  for (const [name, u] of Object.entries(byPlugin)) {
    const owner = ownerOf(name) ?? (name === AGENT_ITSELF || name === UNATTRIBUTED ? name : NO_OWNER);
    byOwner[owner] = sum(byOwner[owner] ?? ZERO, u);
  }
  return byOwner;
}

/** All of a plugin's (or owner's) time in the turn: its tools, its hooks and transforms, and the model calls attributed to it. */
export function wallMs(usage: AttributedUsage | undefined): number {
  return usage === undefined ? 0 : usage.toolMs + usage.hookMs + usage.modelMs;
}

function sum(a: AttributedUsage, b: Partial<AttributedUsage>): AttributedUsage {
  return {
    inputTokens: a.inputTokens + (b.inputTokens ?? 0),
    outputTokens: a.outputTokens + (b.outputTokens ?? 0),
    totalTokens: a.totalTokens + (b.totalTokens ?? 0),
    toolMs: a.toolMs + (b.toolMs ?? 0),
    toolCalls: a.toolCalls + (b.toolCalls ?? 0),
    hookMs: a.hookMs + (b.hookMs ?? 0),
    modelMs: a.modelMs + (b.modelMs ?? 0),
  };
}

/**
 * A split with each plugin's hook time as the turn counts it now: hooks that ran after the
 * result was built (`message.sending`, `task.end`) are counted too. Returns `split` itself when
 * nothing changed.
 */
export function withHookMs<S extends Partial<UsageSplit>>(
  split: S,
  hookMs: Readonly<Record<string, number>>,
  ownerOf: (plugin: string) => string | undefined,
): S {
  const byPlugin = split.byPlugin;
  if (byPlugin === undefined) return split;
  let changed: Record<string, AttributedUsage> | undefined;
  for (const [plugin, ms] of Object.entries(hookMs)) {
    if (byPlugin[plugin]?.hookMs === ms) continue;
    changed ??= { ...byPlugin };
    changed[plugin] = { ...(byPlugin[plugin] ?? ZERO), hookMs: ms };
  }
  if (changed === undefined) return split;
  return { ...split, byPlugin: changed, byOwner: byOwnerOf(changed, ownerOf) };
}
