import { TrellisError, type Decision } from '../../../index.js';
import type { TurnAction } from '../ui-turns/turn-session.js';

/** A run request as Trellis reads it. */
export interface AgUiRun {
  readonly threadId: string;
  readonly runId: string;
  readonly action: TurnAction;
}

const MAX_ID = 200;

/**
 * Reads an AG-UI `RunAgentInput`: with `resume` entries it continues the thread's suspended
 * turn — a `resolved` entry's payload `{ decision: 'approve' | 'reject' | 'edit', args?,
 * message? }` (or `{ approved: boolean }`) decides the call whose id is the interrupt's; a
 * `cancelled` entry rejects it — else the last user message is a new turn.
 *
 * @throws TrellisError `InvalidOptions`, saying what to send.
 */
export function readRunInput(body: unknown): AgUiRun {
  if (!isObject(body)) throw invalid('The body must be an AG-UI RunAgentInput: { threadId, runId, messages }');
  const { threadId, runId } = body;
  for (const [name, value] of [
    ['threadId', threadId],
    ['runId', runId],
  ] as const) {
    if (typeof value !== 'string' || value.trim() === '' || value.length > MAX_ID || /[\u0000-\u001f]/.test(value))
      throw invalid(`${name} must be a string of 1 to ${MAX_ID} characters without control characters`);
  }
  if (Array.isArray(body.resume) && body.resume.length > 0) {
    const decisions = body.resume.map(decisionOf);
    return { threadId: threadId as string, runId: runId as string, action: { kind: 'resume', decisions } };
  }
  const messages = Array.isArray(body.messages) ? body.messages : [];
  const last = [...messages].reverse().find((m) => isObject(m) && m.role === 'user') as
    Record<string, unknown> | undefined;
  const text =
    typeof last?.content === 'string'
      ? last.content
      : Array.isArray(last?.content)
        ? last.content
            .filter((c) => isObject(c) && c.type === 'text')
            .map((c) => (c as { text: string }).text)
            .join('\n')
        : '';
  if (text.trim() === '') throw invalid('The run carries neither resume entries nor a user message with text');
  return { threadId: threadId as string, runId: runId as string, action: { kind: 'send', message: text } };
}

function decisionOf(entry: unknown): Decision {
  if (!isObject(entry) || typeof entry.interruptId !== 'string')
    throw invalid('Each resume entry needs an interruptId (the call id of the interrupt)');
  const callId = entry.interruptId;
  if (entry.status === 'cancelled') return { callId, decision: 'reject', message: 'The user cancelled this call' };
  if (entry.status !== 'resolved') throw invalid(`resume entry ${callId}: status must be 'resolved' or 'cancelled'`);
  const payload = isObject(entry.payload) ? entry.payload : {};
  const decision =
    payload.decision ?? (payload.approved === true ? 'approve' : payload.approved === false ? 'reject' : undefined);
  const message =
    typeof payload.message === 'string'
      ? payload.message
      : typeof payload.reason === 'string'
        ? payload.reason
        : undefined;
  if (decision === 'approve') return { callId, decision: 'approve' };
  if (decision === 'reject') return { callId, decision: 'reject', ...(message ? { message } : {}) };
  if (decision === 'edit' && isObject(payload.args)) return { callId, decision: 'edit', args: payload.args };
  throw invalid(
    `resume entry ${callId}: the payload must be { decision: 'approve' | 'reject' | 'edit', args?, message? } or { approved: boolean }`,
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(message: string): TrellisError {
  return new TrellisError('InvalidOptions', message, { hint: 'See docs/ag-ui.md' });
}
