import type { ChatCompletionContentPart, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { describePart, hasMediaParts, messageParts, partsText, type ContentPart } from '../../contract/content-part.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import type { ToolNameCodec } from './tool-name-codec.js';

/**
 * Trellis messages as chat-completions messages. Deterministic: the same messages give
 * byte-identical JSON, so the prefix a session repeats on every call stays stable and
 * OpenAI's automatic prompt caching applies (no timestamps, no ids made here, key order fixed).
 *
 * Parts: text → `text`, image → `image_url` (a URL, or a `data:` URL of the bytes), PDF →
 * `file` with `file_data` as a `data:` URL; a plain-text file is inlined as a text part
 * (chat completions takes only PDFs as files). Tool messages may carry only text, so a tool
 * result with images or files is sent as its text plus a placeholder per part, and the parts
 * follow in one user message after the round's tool messages.
 */
export function toOpenAIMessages(source: readonly ChatMessage[], codec: ToolNameCodec): ChatCompletionMessageParam[] {
  const messages: ChatCompletionMessageParam[] = [];
  let carried: ChatCompletionContentPart[] = [];
  for (const message of source) {
    if (message.role !== 'tool' && carried.length > 0) {
      messages.push({ role: 'user', content: carried });
      carried = [];
    }
    if (message.role === 'tool' && hasMediaParts(message)) {
      const parts = messageParts(message);
      messages.push({
        role: 'tool',
        tool_call_id: message.toolCallId ?? '',
        content: parts.map(describePart).join('\n'),
      });
      carried.push(
        { type: 'text', text: `Content returned by tool ${message.name ?? ''} (call ${message.toolCallId ?? '?'}):` },
        ...toOpenAIParts(parts.filter((part) => part.type !== 'text')),
      );
      continue;
    }
    messages.push(toOpenAIMessage(message, codec));
  }
  if (carried.length > 0) messages.push({ role: 'user', content: carried });
  return messages;
}

function toOpenAIMessage(message: ChatMessage, codec: ToolNameCodec): ChatCompletionMessageParam {
  switch (message.role) {
    case 'system':
      return { role: 'system', content: message.parts ? partsText(message.parts) : message.content };
    case 'user':
      return {
        role: 'user',
        content: message.parts && hasMediaParts(message) ? toOpenAIParts(message.parts) : message.content,
      };
    case 'tool':
      return { role: 'tool', tool_call_id: message.toolCallId ?? '', content: message.content };
    case 'assistant':
      if (!message.toolCalls?.length) return { role: 'assistant', content: message.content };
      return {
        role: 'assistant',
        // OpenAI wants null rather than '' beside tool calls.
        content: message.content || null,
        tool_calls: message.toolCalls.map((call) => ({
          id: call.id,
          type: 'function' as const,
          function: { name: codec.encode(call.name), arguments: call.arguments },
        })),
      };
  }
}

function toOpenAIParts(parts: readonly ContentPart[]): ChatCompletionContentPart[] {
  return parts.map((part): ChatCompletionContentPart => {
    switch (part.type) {
      case 'text':
        return { type: 'text', text: part.text };
      case 'image':
        return { type: 'image_url', image_url: { url: part.url ?? `data:${part.mediaType};base64,${part.data}` } };
      case 'file':
        if (part.mediaType === 'text/plain')
          return {
            type: 'text',
            text: `<file name="${part.name}">\n${Buffer.from(part.data, 'base64').toString('utf8')}\n</file>`,
          };
        return { type: 'file', file: { filename: part.name, file_data: `data:${part.mediaType};base64,${part.data}` } };
    }
  });
}
