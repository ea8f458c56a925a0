import { Role, type Message, type Part } from '@a2a-js/sdk';
import { randomUUID } from 'node:crypto';

/** A text part, as the v1.0 protocol types spell it. */
export function textPart(text: string): Part {
  return { content: { $case: 'text', value: text }, metadata: undefined, filename: '', mediaType: 'text/plain' };
}

/** A JSON data part. */
export function dataPart(value: unknown): Part {
  return { content: { $case: 'data', value }, metadata: undefined, filename: '', mediaType: 'application/json' };
}

/** An agent's (or user's) message of a task. */
export function a2aMessage(
  role: 'agent' | 'user',
  parts: Part[],
  ids: { taskId?: string; contextId?: string } = {},
): Message {
  return {
    messageId: randomUUID(),
    role: role === 'agent' ? Role.ROLE_AGENT : Role.ROLE_USER,
    parts,
    taskId: ids.taskId ?? '',
    contextId: ids.contextId ?? '',
    extensions: [],
    metadata: {},
    referenceTaskIds: [],
  };
}

/** The text of a message's text parts, joined. */
export function textOf(message: Message | undefined): string {
  return (message?.parts ?? []).flatMap((p) => (p.content?.$case === 'text' ? [p.content.value] : [])).join('\n');
}

/** The data parts' values of a message. */
export function dataOf(message: Message | undefined): unknown[] {
  return (message?.parts ?? []).flatMap((p) => (p.content?.$case === 'data' ? [p.content.value] : []));
}
