import type {
  CacheControlEphemeral,
  ContentBlockParam,
  DocumentBlockParam,
  ImageBlockParam,
  MessageParam,
  TextBlockParam,
  Tool,
  ToolResultBlockParam,
} from '@anthropic-ai/sdk/resources/messages';
import { hasMediaParts, messageParts, partsText, type ContentPart } from '../../contract/content-part.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import type { ToolNameCodec } from './tool-name-codec.js';

/** Where `AnthropicModel` puts `cache_control` breakpoints (Anthropic allows four a request). */
export type CacheBreakpoint = 'tools' | 'system' | 'history' | 'latest';

/**
 * Prompt caching of `AnthropicModel`: `false` sends no `cache_control` at all; otherwise
 * the breakpoints it sets (default all four) and their time to live (default Anthropic's 5m).
 * - `tools`: the last tool definition (the tool list is the first thing in the prefix);
 * - `system`: the last block of the system prompt;
 * - `history`: the last block before the newest user message (the transcript of earlier turns);
 * - `latest`: the last block of the request, so the rounds of one turn read each other's prefix.
 */
export type AnthropicPromptCache =
  false | { readonly breakpoints?: readonly CacheBreakpoint[]; readonly ttl?: '5m' | '1h' };

const ALL_BREAKPOINTS: readonly CacheBreakpoint[] = ['tools', 'system', 'history', 'latest'];

/** The mapped request parts a breakpoint may land on. */
export interface AnthropicPrompt {
  system: TextBlockParam[];
  messages: MessageParam[];
  tools: Tool[];
}

/**
 * Splits out the system prompt and maps the rest into alternating user/assistant messages:
 * assistant tool calls become `tool_use` blocks; tool messages become `tool_result` blocks
 * of a user message, consecutive ones merged as the API requires. Parts: image → `image`
 * (a `base64` or `url` source), PDF → `document` with a `base64` source, plain text →
 * `document` with a `text` source; a tool's parts go inside its `tool_result`.
 */
export function toAnthropicMessages(
  source: readonly ChatMessage[],
  codec: ToolNameCodec,
): { system: TextBlockParam[]; messages: MessageParam[]; newestUser: number } {
  const systemParts: string[] = [];
  const messages: MessageParam[] = [];
  let newestUser = -1;
  for (const message of source) {
    if (message.role === 'system') {
      systemParts.push(message.parts ? partsText(message.parts) : message.content);
      continue;
    }
    const role = message.role === 'assistant' ? 'assistant' : 'user';
    const content = toContent(message, codec);
    const last = messages[messages.length - 1];
    // Tool results of one round arrive as several tool messages but belong in one user turn.
    if (last?.role === role && (message.role === 'tool' || Array.isArray(last.content))) {
      last.content = [...asBlocks(last.content), ...asBlocks(content)];
    } else {
      messages.push({ role, content });
    }
    if (message.role === 'user') newestUser = messages.length - 1;
  }
  const system = systemParts.join('\n\n');
  return { system: system ? [{ type: 'text', text: system }] : [], messages, newestUser };
}

/**
 * Sets `cache_control` on the stable prefix, in place: the last tool, the last system
 * block, the end of the transcript before the newest user message, and the last block.
 * A breakpoint lands only on a block that can carry one; an empty prompt gets none.
 */
export function addCacheBreakpoints(
  prompt: AnthropicPrompt,
  newestUser: number,
  cache: AnthropicPromptCache | undefined,
): void {
  if (cache === false) return;
  const wanted = new Set(cache?.breakpoints ?? ALL_BREAKPOINTS);
  const control: CacheControlEphemeral = cache?.ttl ? { type: 'ephemeral', ttl: cache.ttl } : { type: 'ephemeral' };
  const lastTool = prompt.tools[prompt.tools.length - 1];
  if (wanted.has('tools') && lastTool) lastTool.cache_control = control;
  const lastSystem = prompt.system[prompt.system.length - 1];
  if (wanted.has('system') && lastSystem) lastSystem.cache_control = control;
  if (wanted.has('history') && newestUser > 0) markLastBlock(prompt.messages[newestUser - 1]!, control);
  if (wanted.has('latest') && prompt.messages.length > 0)
    markLastBlock(prompt.messages[prompt.messages.length - 1]!, control);
}

function markLastBlock(message: MessageParam, control: CacheControlEphemeral): void {
  const blocks = asBlocks(message.content);
  const last = blocks[blocks.length - 1];
  if (!last || !('type' in last)) return;
  // Thinking blocks and empty text cannot carry a breakpoint.
  if (last.type === 'thinking' || last.type === 'redacted_thinking' || (last.type === 'text' && last.text === ''))
    return;
  (last as { cache_control?: CacheControlEphemeral }).cache_control = control;
  message.content = blocks;
}

function toContent(message: ChatMessage, codec: ToolNameCodec): string | ContentBlockParam[] {
  if (message.role === 'tool') {
    if (!hasMediaParts(message))
      return [{ type: 'tool_result', tool_use_id: message.toolCallId ?? '', content: message.content }];
    const content = messageParts(message).map(toBlock) as NonNullable<ToolResultBlockParam['content']>;
    return [{ type: 'tool_result', tool_use_id: message.toolCallId ?? '', content }];
  }
  if (message.role === 'assistant' && message.toolCalls?.length) {
    const blocks: ContentBlockParam[] = message.content ? [{ type: 'text', text: message.content }] : [];
    for (const call of message.toolCalls) {
      blocks.push({
        type: 'tool_use',
        id: call.id,
        name: codec.encode(call.name),
        input: parseToolInput(call.arguments),
      });
    }
    return blocks;
  }
  if (message.parts && hasMediaParts(message))
    return message.parts.filter((part) => part.type !== 'text' || part.text !== '').map(toBlock);
  return message.content;
}

function toBlock(part: ContentPart): TextBlockParam | ImageBlockParam | DocumentBlockParam {
  switch (part.type) {
    case 'text':
      return { type: 'text', text: part.text };
    case 'image':
      if (part.url === undefined)
        return {
          type: 'image',
          source: { type: 'base64', media_type: part.mediaType as 'image/png', data: part.data },
        };
      return { type: 'image', source: imageUrlSource(part.url) };
    case 'file':
      if (part.mediaType === 'text/plain')
        return {
          type: 'document',
          title: part.name,
          source: { type: 'text', media_type: 'text/plain', data: Buffer.from(part.data, 'base64').toString('utf8') },
        };
      return {
        type: 'document',
        title: part.name,
        source: { type: 'base64', media_type: 'application/pdf', data: part.data },
      };
  }
}

/** A `data:` URL becomes a base64 source (Anthropic fetches only http(s) URLs). */
function imageUrlSource(url: string): ImageBlockParam['source'] {
  const match = /^data:(image\/[a-z+.-]+);base64,(.*)$/i.exec(url);
  if (match) return { type: 'base64', media_type: match[1]!.toLowerCase() as 'image/png', data: match[2]! };
  return { type: 'url', url };
}

function asBlocks(content: string | ContentBlockParam[]): ContentBlockParam[] {
  if (typeof content !== 'string') return content;
  return content ? [{ type: 'text', text: content }] : [];
}

/** `tool_use.input` must be an object; arguments the model garbled are replayed as `{}`. */
function parseToolInput(args: string): Record<string, unknown> {
  try {
    const value: unknown = JSON.parse(args || '{}');
    return typeof value === 'object' && value !== null && !Array.isArray(value)
      ? (value as Record<string, unknown>)
      : {};
  } catch {
    return {};
  }
}
