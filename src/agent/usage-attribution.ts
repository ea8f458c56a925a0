import type { ToolCallRecord } from '../contract/tool-result.js';
import type { Usage } from '../models/model-provider.js';

/** What one plugin (or owner) caused in a turn: model tokens and tool time. */
export interface AttributedUsage extends Usage {
  /** Wall time of its tool calls, in milliseconds. */
  readonly toolMs: number;
  readonly toolCalls: number;
}

/** The name `byPlugin` uses for model calls no plugin's tool led to: the first round, and rounds after no tool ran. */
export const AGENT_ITSELF = '(agent)';
/** Tokens of rounds whose split was not kept (a turn continued from a journal or suspension record written before the split was kept in it). */
export const UNATTRIBUTED = '(unattributed)';

/**
 * Splits a turn's spend by plugin and by owner. A tool call's time is its plugin's. A model
 * call's tokens are caused by the tool results it reads: the tokens of round N go to the
 * plugins whose tools ran in round N − 1, shared evenly per call; round 1, and a round after
 * one without tool calls, is the agent's own ({@link AGENT_ITSELF}). Tokens the turn counted
 * but whose round is not known are {@link UNATTRIBUTED}, so the parts add up to the total.
 */
export function attributeUsage(
  total: Usage,
  rounds: Readonly<Record<number, Usage>>,
  calls: readonly ToolCallRecord[],
  pluginOf: (tool: string) => { readonly plugin: string; readonly owner?: string } | undefined,
): { byPlugin: Record<string, AttributedUsage>; byOwner: Record<string, AttributedUsage> } {
  const byPlugin: Record<string, AttributedUsage> = {};
  const owners = new Map<string, string | undefined>();
  const add = (name: string, u: Partial<AttributedUsage>) => {
    const p = byPlugin[name] ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0, toolMs: 0, toolCalls: 0 };
    byPlugin[name] = { inputTokens: p.inputTokens + (u.inputTokens ?? 0), outputTokens: p.outputTokens + (u.outputTokens ?? 0), totalTokens: p.totalTokens + (u.totalTokens ?? 0), toolMs: p.toolMs + (u.toolMs ?? 0), toolCalls: p.toolCalls + (u.toolCalls ?? 0) };
  };
  const callsByRound = new Map<number, string[]>();
  for (const call of calls) {
    const who = pluginOf(call.tool);
    const name = who?.plugin ?? AGENT_ITSELF;
    owners.set(name, who?.owner);
    add(name, { toolMs: call.durationMs, toolCalls: 1 });
    callsByRound.set(call.round, [...(callsByRound.get(call.round) ?? []), name]);
  }
  let counted: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  for (const [key, usage] of Object.entries(rounds)) {
    const causes = callsByRound.get(Number(key) - 1) ?? [AGENT_ITSELF];
    const share = 1 / causes.length;
    for (const name of causes) add(name, { inputTokens: usage.inputTokens * share, outputTokens: usage.outputTokens * share, totalTokens: usage.totalTokens * share });
    counted = { inputTokens: counted.inputTokens + usage.inputTokens, outputTokens: counted.outputTokens + usage.outputTokens, totalTokens: counted.totalTokens + usage.totalTokens };
  }
  const rest = { inputTokens: total.inputTokens - counted.inputTokens, outputTokens: total.outputTokens - counted.outputTokens, totalTokens: total.totalTokens - counted.totalTokens };
  if (rest.inputTokens > 0 || rest.outputTokens > 0 || rest.totalTokens > 0) add(UNATTRIBUTED, rest);
  const byOwner: Record<string, AttributedUsage> = {};
  for (const [name, u] of Object.entries(byPlugin)) {
    const owner = owners.get(name) ?? (name === AGENT_ITSELF || name === UNATTRIBUTED ? name : '(no owner)');
    const o = byOwner[owner] ?? { inputTokens: 0, outputTokens: 0, totalTokens: 0, toolMs: 0, toolCalls: 0 };
    byOwner[owner] = { inputTokens: o.inputTokens + u.inputTokens, outputTokens: o.outputTokens + u.outputTokens, totalTokens: o.totalTokens + u.totalTokens, toolMs: o.toolMs + u.toolMs, toolCalls: o.toolCalls + u.toolCalls };
  }
  return { byPlugin, byOwner };
}
