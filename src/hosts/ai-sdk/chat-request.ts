import { TrellisError, type Decision } from '../../../index.js';
import type { TurnAction } from '../ui-turns/turn-session.js';

/** A useChat request as Trellis reads it: which chat, and what to do. */
export interface ChatRequest {
  /** The chat's id, as the front end sent it (`useChat({ id })`). */
  readonly chatId: string;
  readonly action: TurnAction;
  /** The assistant message a resumed turn continues, so the stream goes on in it. */
  readonly continues?: string;
  /** The tool calls the continued message already shows: their parts are updated, not added again. */
  readonly known?: readonly string[];
}

const MAX_ID = 200;
const MAX_TEXT = 100_000;

/**
 * Reads the body `useChat`'s default transport posts — `{ id, messages, trigger }` — or the
 * lighter `{ id, message }` a `prepareSendMessagesRequest` may send (Trellis keeps the
 * transcript, so only the last message matters). A last message from the user is a new
 * turn (its text parts); a last assistant message whose tool parts carry approval responses
 * is a resume with those decisions (`approved` → approve, else reject with the reason).
 *
 * @throws TrellisError `InvalidOptions` for anything else, saying what to send.
 */
export function readChatRequest(body: unknown): ChatRequest {
  if (!isObject(body)) throw invalid('The body must be a JSON object: { id, messages } as useChat sends it');
  const chatId = body.id;
  if (typeof chatId !== 'string' || chatId.trim() === '' || chatId.length > MAX_ID || /[\u0000-\u001f]/.test(chatId)) {
    throw invalid(`id must be the chat's id: a string of 1 to ${MAX_ID} characters without control characters`);
  }
  const last = isObject(body.message) ? body.message : Array.isArray(body.messages) ? body.messages.at(-1) : undefined;
  if (!isObject(last) || !Array.isArray(last.parts))
    throw invalid('The request carries no message: send { id, messages: [...] } or { id, message }');
  if (last.role === 'user') {
    const text = last.parts
      .filter(
        (p): p is { type: 'text'; text: string } => isObject(p) && p.type === 'text' && typeof p.text === 'string',
      )
      .map((p) => p.text)
      .join('\n');
    if (text.trim() === '') throw invalid('The user message has no text part');
    if (text.length > MAX_TEXT)
      throw invalid(`The user message is ${text.length} characters long; at most ${MAX_TEXT} are taken`);
    return { chatId, action: { kind: 'send', message: text } };
  }
  if (last.role === 'assistant') {
    const decisions: Decision[] = [];
    for (const part of last.parts) {
      if (!isObject(part) || part.state !== 'approval-responded' || !isObject(part.approval)) continue;
      const { id, approved, reason } = part.approval;
      if (typeof id !== 'string' || typeof approved !== 'boolean') continue;
      decisions.push(
        approved
          ? { callId: id, decision: 'approve' }
          : {
              callId: id,
              decision: 'reject',
              ...(typeof reason === 'string' && reason !== '' ? { message: reason } : {}),
            },
      );
    }
    if (decisions.length === 0)
      throw invalid(
        "The last message is the assistant's and answers no approval: send a user message, or approval responses (addToolApprovalResponse)",
      );
    const known = last.parts.flatMap((p) => (isObject(p) && typeof p.toolCallId === 'string' ? [p.toolCallId] : []));
    return {
      chatId,
      action: { kind: 'resume', decisions },
      continues: typeof last.id === 'string' ? last.id : undefined,
      known,
    };
  }
  throw invalid(`The last message's role must be 'user' or 'assistant', got ${JSON.stringify(last.role)}`);
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string): TrellisError {
  return new TrellisError('InvalidOptions', message, { hint: 'See docs/ai-sdk.md for what a useChat front end sends' });
}
