import type { ChatMessage } from 'trellis/plugin';

/** The rough rule the memory plugins count by: about four characters per token. */
export const CHARS_PER_TOKEN = 4;

/** Estimated tokens of a text: its length over `charsPerToken`, rounded up. */
export function estimateTextTokens(text: string, charsPerToken = CHARS_PER_TOKEN): number {
  return Math.ceil(text.length / charsPerToken);
}

/** Estimated tokens of a message: its content, plus the names and arguments of its tool calls. */
export function estimateMessageTokens(message: ChatMessage, charsPerToken = CHARS_PER_TOKEN): number {
  let chars = message.content.length;
  if (message.toolCalls) for (const call of message.toolCalls) chars += call.name.length + call.arguments.length;
  return Math.ceil(chars / charsPerToken);
}

/** Cuts a text to at most `maxTokens` estimated tokens, marking the cut with `…`. */
export function clipToTokens(text: string, maxTokens: number, charsPerToken = CHARS_PER_TOKEN): string {
  const maxChars = Math.floor(maxTokens * charsPerToken);
  return text.length <= maxChars ? text : `${text.slice(0, Math.max(0, maxChars - 1))}…`;
}
