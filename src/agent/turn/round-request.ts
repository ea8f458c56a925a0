import type { ChatMessage, InferenceSettings, ToolDefinition } from '../../contract/model-provider.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';

const definitions = new WeakMap<RegisteredTool, ToolDefinition>();

/** What the model is told about a tool; built once per registered tool. */
export function toolDefinition(tool: RegisteredTool): ToolDefinition {
  let definition = definitions.get(tool);
  if (!definition) {
    definition = { name: tool.name, description: tool.description, inputSchema: tool.schema };
    definitions.set(tool, definition);
  }
  return definition;
}

const definitionLists = new WeakMap<readonly RegisteredTool[], readonly ToolDefinition[]>();

/** The definitions of a tool list; cached per list, since a round usually offers the agent's unchanged list. */
export function toolDefinitions(tools: readonly RegisteredTool[]): readonly ToolDefinition[] {
  let list = definitionLists.get(tools);
  if (!list) {
    list = Object.freeze(tools.map(toolDefinition));
    definitionLists.set(tools, list);
  }
  return list;
}

type TurnValues = Readonly<Record<string, unknown>>;

/** `IncludeOnlyTools` lists are unioned (turn and round), then `ExcludeTool` lists applied. */
export function filterTools(tools: readonly RegisteredTool[], turn: TurnValues): readonly RegisteredTool[] {
  if (
    turn[KERNEL_KEYS.includeTools] === undefined &&
    turn[KERNEL_KEYS.roundIncludeTools] === undefined &&
    turn[KERNEL_KEYS.excludeTools] === undefined &&
    turn[KERNEL_KEYS.roundExcludeTools] === undefined
  )
    return tools;
  const include = [
    ...((turn[KERNEL_KEYS.includeTools] as string[] | undefined) ?? []),
    ...((turn[KERNEL_KEYS.roundIncludeTools] as string[] | undefined) ?? []),
  ];
  const exclude = [
    ...((turn[KERNEL_KEYS.excludeTools] as string[] | undefined) ?? []),
    ...((turn[KERNEL_KEYS.roundExcludeTools] as string[] | undefined) ?? []),
  ];
  if (include.length === 0 && exclude.length === 0) return tools;
  const only = include.length > 0 ? new Set(include) : undefined;
  const not = new Set(exclude);
  return tools.filter((t) => (!only || only.has(t.name)) && !not.has(t.name));
}

/** Agent default, then turn, then round overrides, field by field; the last writer wins. `turn` undefined: no override is set. */
export function mergeInference(agent: InferenceSettings | undefined, turn: TurnValues | undefined): InferenceSettings {
  if (turn === undefined) return agent ?? {};
  const turnOverride = turn[KERNEL_KEYS.inferenceTurn] as InferenceSettings | undefined;
  const roundOverride = turn[KERNEL_KEYS.inferenceRound] as InferenceSettings | undefined;
  if (!turnOverride && !roundOverride) return agent ?? {};
  return { ...agent, ...turnOverride, ...roundOverride };
}

/** System prompt, messages added by actions and memory, the session's transcript, then this turn's messages. */
export function roundMessages(
  instructions: string,
  context: readonly ChatMessage[] | undefined,
  recalled: readonly ChatMessage[],
  transcript: readonly ChatMessage[],
  turn: readonly ChatMessage[],
): ChatMessage[] {
  // Allocated once at its final length and filled by index: `concat` (its generic path checks
  // every argument for `Symbol.isConcatSpreadable`) took ~4x as long, and `push` grew the array
  // four times a round.
  const size = 1 + (context === undefined ? 0 : context.length) + recalled.length + transcript.length + turn.length;
  const messages = new Array<ChatMessage>(size);
  messages[0] = { role: 'system', content: instructions };
  let at = 1;
  if (context !== undefined) at = copyInto(messages, at, context);
  at = copyInto(messages, at, recalled);
  at = copyInto(messages, at, transcript);
  copyInto(messages, at, turn);
  return messages;
}

function copyInto(target: ChatMessage[], at: number, source: readonly ChatMessage[]): number {
  for (let index = 0; index < source.length; index++) target[at++] = source[index]!;
  return at;
}

/** Keys that last one round: cleared once the model call they applied to is built. */
export const ROUND_KEYS = [
  KERNEL_KEYS.inferenceRound,
  KERNEL_KEYS.roundIncludeTools,
  KERNEL_KEYS.roundExcludeTools,
] as const;
