import { hasMediaParts, messageParts, type ChatMessage } from 'trellis/plugin';

/** The rough rule the memory plugins count by: about four characters per token. */
export const CHARS_PER_TOKEN = 4;

/** Estimated tokens of a text: its length over `charsPerToken`, rounded up. */
export function estimateTextTokens(text: string, charsPerToken = CHARS_PER_TOKEN): number {
  return Math.ceil(text.length / charsPerToken);
}

/** What an image or file part counts for: a flat estimate, since its bytes are not text. */
export const MEDIA_PART_TOKENS = 1000;

/**
 * Estimated tokens of a message: its content (for a message with images or files, its
 * text parts plus {@link MEDIA_PART_TOKENS} a part), plus the names and arguments of its
 * tool calls.
 */
export function estimateMessageTokens(message: ChatMessage, charsPerToken = CHARS_PER_TOKEN): number {
  let chars = 0;
  let media = 0;
  if (hasMediaParts(message)) {
    for (const part of messageParts(message)) {
      if (part.type === 'text') chars += part.text.length;
      else media += MEDIA_PART_TOKENS;
    }
  } else {
    chars = message.content.length;
  }
  if (message.toolCalls) for (const call of message.toolCalls) chars += call.name.length + call.arguments.length;
  return Math.ceil(chars / charsPerToken) + media;
}

/** Cuts a text to at most `maxTokens` estimated tokens, marking the cut with `…`. */
export function clipToTokens(text: string, maxTokens: number, charsPerToken = CHARS_PER_TOKEN): string {
  const maxChars = Math.floor(maxTokens * charsPerToken);
  return text.length <= maxChars ? text : `${text.slice(0, Math.max(0, maxChars - 1))}…`;
}
