import type { PluginContext } from '../../contract/plugin-context.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { ChatMessage, InferenceSettings } from '../../contract/model-provider.js';
import { kernelMember, type KeyedHandler } from '../../contract/plugin-member.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';

/** The actions every app handles. */
export const BuiltInActions = {
  AddContextMessage: 'AddContextMessage',
  SetInferenceOverride: 'SetInferenceOverride',
  ExcludeTool: 'ExcludeTool',
  IncludeOnlyTools: 'IncludeOnlyTools',
} as const;

/** `AddContextMessage`: a message added to the model request for the rest of the turn. */
export type AddContextMessagePayload =
  string | { readonly role?: 'system' | 'user' | 'assistant'; readonly content: string };
/** `SetInferenceOverride`: fields merged over the agent's defaults; `round` ones last one round. */
export type SetInferenceOverridePayload = InferenceSettings & { readonly scope?: 'turn' | 'round' };
/** `ExcludeTool` / `IncludeOnlyTools`: tool names; includes are unioned, then exclusions applied. */
export type ToolFilterPayload =
  string | readonly string[] | { readonly tools: string | readonly string[]; readonly scope?: 'turn' | 'round' };

const INFERENCE_FIELDS = ['model', 'temperature', 'maxTokens', 'topP', 'reasoningEffort'] as const;

function invalid(action: string, message: string): TrellisError {
  return new TrellisError('InvalidOptions', `${action}: ${message}`, {
    hint: 'Fix the payload passed to ctx.schedule()',
  });
}

function addContextMessage(payload: unknown, ctx: PluginContext): void {
  const message: ChatMessage | undefined =
    typeof payload === 'string'
      ? { role: 'system', content: payload }
      : typeof payload === 'object' &&
          payload !== null &&
          typeof (payload as { content?: unknown }).content === 'string'
        ? {
            role: (payload as { role?: ChatMessage['role'] }).role ?? 'system',
            content: (payload as { content: string }).content,
          }
        : undefined;
  if (!message || !['system', 'user', 'assistant'].includes(message.role))
    throw invalid('AddContextMessage', 'expected a string or { role?, content }');
  ctx.update<ChatMessage[]>(KERNEL_KEYS.contextMessages, (list) => [...(list ?? []), message]);
}

function setInferenceOverride(payload: unknown, ctx: PluginContext): void {
  if (typeof payload !== 'object' || payload === null)
    throw invalid('SetInferenceOverride', 'expected an object of inference fields');
  const { scope = 'turn', ...fields } = payload as SetInferenceOverridePayload;
  const unknown = Object.keys(fields).filter((k) => !(INFERENCE_FIELDS as readonly string[]).includes(k));
  if (unknown.length > 0)
    throw invalid(
      'SetInferenceOverride',
      `unknown fields ${unknown.join(', ')} (known: ${INFERENCE_FIELDS.join(', ')})`,
    );
  const key = scope === 'round' ? KERNEL_KEYS.inferenceRound : KERNEL_KEYS.inferenceTurn;
  ctx.update<InferenceSettings>(key, (previous) => ({ ...previous, ...fields }));
}

function toolNames(action: string, payload: unknown): { tools: readonly string[]; scope: 'turn' | 'round' } {
  const raw =
    typeof payload === 'object' && payload !== null && !Array.isArray(payload)
      ? (payload as { tools: unknown; scope?: 'turn' | 'round' })
      : { tools: payload };
  const tools = typeof raw.tools === 'string' ? [raw.tools] : raw.tools;
  if (!Array.isArray(tools) || !tools.every((t) => typeof t === 'string'))
    throw invalid(action, 'expected a tool name, a list of names, or { tools, scope? }');
  return { tools, scope: (raw as { scope?: 'turn' | 'round' }).scope ?? 'turn' };
}

/** A set union that keeps first-seen order: two plugins excluding the same tool list it once. */
function union(list: readonly string[] | undefined, tools: readonly string[]): string[] {
  return [...new Set([...(list ?? []), ...tools])];
}

function excludeTool(payload: unknown, ctx: PluginContext): void {
  const { tools, scope } = toolNames('ExcludeTool', payload);
  ctx.update<string[]>(scope === 'round' ? KERNEL_KEYS.roundExcludeTools : KERNEL_KEYS.excludeTools, (list) =>
    union(list, tools),
  );
}

function includeOnlyTools(payload: unknown, ctx: PluginContext): void {
  const { tools, scope } = toolNames('IncludeOnlyTools', payload);
  ctx.update<string[]>(scope === 'round' ? KERNEL_KEYS.roundIncludeTools : KERNEL_KEYS.includeTools, (list) =>
    union(list, tools),
  );
}

const handler = (key: string, method: string, fn: (payload: unknown, ctx: PluginContext) => void): KeyedHandler =>
  kernelMember({
    plugin: 'trellis',
    method,
    key,
    requires: [],
    declared: new Set<string>(),
    fn,
  });

export const BUILT_IN_ACTION_HANDLERS: readonly KeyedHandler[] = [
  handler(BuiltInActions.AddContextMessage, 'addContextMessage', addContextMessage),
  handler(BuiltInActions.SetInferenceOverride, 'setInferenceOverride', setInferenceOverride),
  handler(BuiltInActions.ExcludeTool, 'excludeTool', excludeTool),
  handler(BuiltInActions.IncludeOnlyTools, 'includeOnlyTools', includeOnlyTools),
];
