import type { AppDescription, TurnResult } from '../../../../index.js';
import { approvalLines } from './approval-prompt.js';
import { escapeControl } from './terminal-text.js';

/** `completed · 3 rounds · 2 tools · 1 retry · 841 tokens · 0.4 s · session abc` (retries only when there were some). */
export function summaryLine(result: TurnResult, elapsedMs: number, sessionId: string, retries = 0): string {
  const rounds = counted(result.rounds, 'round');
  const tools = counted(result.toolCalls.length, 'tool');
  const retried = retries > 0 ? ` · ${retries} ${retries === 1 ? 'retry' : 'retries'}` : '';
  return `— ${result.status} · ${rounds} · ${tools}${retried} · ${result.usage.totalTokens} tokens · ${elapsed(elapsedMs)} · session ${sessionId}`;
}

/** `1 round`, `2 rounds`: a count with its noun, plural when it is not one. */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

/** What a suspended turn waits for, and the command that decides it (`command`: how the CLI is run, see `invocation`). */
export function pendingLines(
  result: TurnResult,
  sessionId: string,
  app?: AppDescription,
  command = 'trellis',
): string[] {
  if (result.status !== 'suspended') return [];
  const lines = (result.suspended ?? []).flatMap((p) => approvalLines(p, app));
  const first = result.suspended?.[0]?.callId ?? '<callId>';
  lines.push(`Decide with: ${command} resume ${sessionId} --approve ${first}   (or --reject ${first})`);
  return lines;
}

/** The reply, or why there is none. */
export function replyLines(result: TurnResult): string[] {
  if (result.reply !== undefined) return escapeControl(result.reply).split('\n');
  if (result.error) return [escapeControl(`(${result.status}: ${result.error.code}: ${result.error.message})`)];
  return [];
}

function elapsed(ms: number): string {
  return ms < 1000 ? `${Math.round(ms)} ms` : `${(ms / 1000).toFixed(1)} s`;
}
