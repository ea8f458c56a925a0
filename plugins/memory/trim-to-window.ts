import type { ChatMessage } from 'trellis/plugin';
import { conversationUnits, latestTurnStart } from './conversation.js';
import { estimateMessageTokens } from './token-estimate.js';

/**
 * Trims messages to a budget of estimated tokens. Kept always: every system message (the
 * instructions, and context, recalled passages or summaries other plugins added) and the
 * latest turn (the last user message and everything after it). Older conversation is
 * dropped oldest first, an assistant message with tool calls always together with its
 * tool messages, and then up to the next user message so what is left starts with the
 * user. Returns the input array itself when it already fits.
 */
export function trimToWindow(
  messages: readonly ChatMessage[],
  maxTokens: number,
  charsPerToken?: number,
): readonly ChatMessage[] {
  const cost = (m: ChatMessage) => estimateMessageTokens(m, charsPerToken);
  let total = 0;
  for (const m of messages) total += cost(m);
  if (total <= maxTokens) return messages;

  const start = latestTurnStart(messages);
  const older = start < 0 ? [] : messages.slice(0, start);
  const latest = start < 0 ? messages.filter((m) => m.role !== 'system') : messages.slice(start);
  const system = (start < 0 ? messages : older).filter((m) => m.role === 'system');
  const units = conversationUnits(older.filter((m) => m.role !== 'system'));

  let kept = 0;
  for (const m of [...system, ...latest]) kept += cost(m);
  const unitCost = units.map((u) => u.messages.reduce((n, m) => n + cost(m), 0));
  let conversation = unitCost.reduce((n, c) => n + c, 0);
  let first = 0;
  while (
    first < units.length &&
    (kept + conversation > maxTokens || units[first]!.orphan || units[first]!.messages[0]!.role !== 'user')
  ) {
    conversation -= unitCost[first]!;
    first++;
  }
  const keptUnits = units.slice(first).filter((u) => !u.orphan);
  // System messages stay where they were relative to each other, in front of the conversation.
  return [...system, ...keptUnits.flatMap((u) => u.messages), ...latest];
}
