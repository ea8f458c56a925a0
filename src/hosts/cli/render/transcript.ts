import type { Decision, PendingApproval } from '../../../../index.js';
import { describeParts, hasMediaParts, messageParts, redactText } from '../../../../plugin.js';
import type { StoredSession } from '../../../../stores.js';
import { redactMessage } from '../../../../host.js';
import { approvalLines } from './approval-prompt.js';
import { escapeControl } from './terminal-text.js';
import { clip } from './tool-activity.js';
import { counted } from './turn-summary.js';

/** A user or assistant message longer than this is cut in `sessions show`, with a note saying so. */
export const MESSAGE_DISPLAY_LIMIT = 4000;

/**
 * A stored session as readable lines: a header, then each turn's record and messages. A
 * message over {@link MESSAGE_DISPLAY_LIMIT} characters is cut, and a note says how much
 * was left out, unless `full` is set. The store keeps what the model read: messages, call
 * arguments and errors are redacted here (by key name and shape; there is no app to name a
 * tool's `@Secret()` fields), as the waiting calls are by `approvalLines`.
 */
export function transcriptLines(session: StoredSession, full = false, command = 'trellis'): string[] {
  const lines = [
    `Session ${escapeControl(session.id)} · agent ${session.agent} · ${counted(session.turns.length, 'turn')} · updated ${session.updatedAt}${session.suspension ? ' · waiting for approval' : ''}`,
  ];
  for (const turn of session.turns) {
    lines.push(
      `Turn ${turn.index + 1}: ${turn.status} · ${counted(turn.rounds, 'round')} · ${counted(turn.toolCalls, 'tool call')}${turn.error ? ` · ${turn.error.code}: ${clip(redactText(turn.error.message), 80)}` : ''}`,
    );
  }
  lines.push('');
  for (const message of session.transcript.map((m) => redactMessage(m))) {
    // Images and files show as a placeholder with media type, name and size.
    const content = hasMediaParts(message) ? describeParts(messageParts(message)) : message.content;
    if (message.role === 'tool') {
      lines.push(`  tool ${message.name ?? ''} (${message.toolCallId ?? '?'}): ${escapeControl(clip(content, 160))}`);
      continue;
    }
    if (content) {
      const text = full ? content : shorten(content, session.id, command);
      lines.push(
        `${message.role}: ${escapeControl(text)
          .split('\n')
          .join(`\n${' '.repeat(message.role.length + 2)}`)}`,
      );
    }
    for (const call of message.toolCalls ?? [])
      lines.push(`  call ${call.name} (${call.id}) ${clip(call.arguments, 140)}`);
  }
  const suspension = session.suspension as {
    input?: string;
    pending?: PendingApproval[];
    decisions?: Decision[];
    started?: string[];
  } | null;
  if (suspension?.input !== undefined)
    lines.push(`user (turn in progress): ${escapeControl(redactText(suspension.input))}`);
  for (const p of suspension?.pending ?? []) {
    lines.push(...approvalLines(p).map((line) => `  ${line}`));
    lines.push(
      `    ${decideLine(
        session.id,
        p,
        suspension?.decisions?.find((d) => d.callId === p.callId),
        suspension?.started?.includes(p.callId) === true,
        command,
      )}`,
    );
  }
  return lines;
}

/**
 * How to decide a waiting call, as the call journal will take it: a call approved before a
 * crash that never started runs on the next resume; one cut off mid-run waits for `--retry`
 * or `--skip` (an idempotent tool is rerun by any resume); anything else takes what its
 * ticket allows.
 */
function decideLine(
  sessionId: string,
  call: PendingApproval,
  claimed: Decision | undefined,
  started: boolean,
  command: string,
): string {
  const id = call.callId;
  if (claimed && (claimed.decision === 'reject' || claimed.decision === 'skip' || !started)) {
    return `decided (${claimed.decision}) before the process stopped; it is carried out on the next resume of ${sessionId}`;
  }
  if (claimed)
    return `cut off mid-run (it may or may not have run): ${command} resume ${sessionId} --retry ${id}   (or --skip ${id}; a tool marked idempotent is run again by any resume)`;
  const allowed = call.ticket.allowedDecisions ?? ['approve', 'reject', 'edit'];
  const others = allowed
    .filter((d) => d !== 'approve')
    .map((d) => (d === 'edit' ? `--edit ${id}='{…}'` : `--${d} ${id}`));
  const first = allowed.includes('approve') ? `--approve ${id}` : others.shift();
  return `decide: ${command} resume ${sessionId} ${first ?? ''}${others.length > 0 ? `   (or ${others.join(', ')})` : ''}`;
}

function shorten(content: string, sessionId: string, command: string): string {
  if (content.length <= MESSAGE_DISPLAY_LIMIT) return content;
  const left = content.length - MESSAGE_DISPLAY_LIMIT;
  return `${content.slice(0, MESSAGE_DISPLAY_LIMIT)}…\n[${left.toLocaleString('en-US')} more characters not shown; all of it: ${command} sessions show ${sessionId} --full]`;
}
