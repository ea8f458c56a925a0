import type { ContentPart } from '../../contract/content-part.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import { redactArguments, redactText } from '../../redaction/redactor.js';

/** The `@Secret()` fields of a tool by its name (from `app.describe()`), for {@link redactMessage}. */
export type SecretFieldsOf = (tool: string) => readonly string[] | undefined;

/**
 * A transcript message as a host may show it: its text and text parts redacted by shape, an
 * image's URL too (its bytes are left as they are), and each tool call's arguments through
 * `redactArguments` with that tool's `@Secret()` fields when `secretFieldsOf` knows them.
 * A tool message's content is the tool's result or error as the model read it.
 */
export function redactMessage(message: ChatMessage, secretFieldsOf?: SecretFieldsOf): ChatMessage {
  return {
    ...message,
    content: redactText(message.content),
    ...(message.parts !== undefined && { parts: message.parts.map(redactPart) }),
    ...(message.toolCalls !== undefined && {
      toolCalls: message.toolCalls.map((call) => ({
        ...call,
        arguments: redactArguments(call.arguments, secretFieldsOf?.(call.name)),
      })),
    }),
  };
}

function redactPart(part: ContentPart): ContentPart {
  if (part.type === 'text') return { ...part, text: redactText(part.text) };
  if (part.type === 'image' && part.url !== undefined) return { ...part, url: redactText(part.url) };
  return part;
}
