import type { ChatMessage } from 'trellis/plugin';

/**
 * The index where the latest turn starts: its user message (everything after it is this
 * turn's assistant and tool messages). `-1` when there is no user message.
 */
export function latestTurnStart(messages: readonly ChatMessage[]): number {
  for (let i = messages.length - 1; i >= 0; i--) if (messages[i]!.role === 'user') return i;
  return -1;
}

/**
 * Splits conversation messages (no system ones) into droppable units: an assistant
 * message with tool calls together with the tool messages answering it, or one message.
 * A tool message whose assistant call is not in front of it is a unit of its own marked
 * `orphan`, so a caller can drop it rather than send it alone.
 */
export function conversationUnits(
  messages: readonly ChatMessage[],
): { readonly messages: ChatMessage[]; readonly orphan: boolean }[] {
  const units: { messages: ChatMessage[]; orphan: boolean }[] = [];
  let open: { messages: ChatMessage[]; ids: Set<string> } | undefined;
  for (const message of messages) {
    if (message.role === 'tool' && open && message.toolCallId !== undefined && open.ids.has(message.toolCallId)) {
      open.messages.push(message);
      continue;
    }
    open = undefined;
    if (message.role === 'assistant' && message.toolCalls && message.toolCalls.length > 0) {
      const unit = { messages: [message], orphan: false };
      units.push(unit);
      open = { messages: unit.messages, ids: new Set(message.toolCalls.map((c) => c.id)) };
    } else {
      units.push({ messages: [message], orphan: message.role === 'tool' });
    }
  }
  return units;
}
