import type { Command } from 'commander';
import type { AppDescription, Approver, Decision, Session, TrellisEvent, TurnResult } from '../../../../index.js';
import { openSession, waitingCalls, withCliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { cliCommand } from '../invocation.js';
import { interruptible, sessionInterrupt } from '../interruptible.js';
import { LineReader } from '../line-reader.js';
import { approvalLines } from '../render/approval-prompt.js';
import { escapeControl } from '../render/terminal-text.js';
import { clip, toolActivityLine } from '../render/tool-activity.js';
import { summaryLine } from '../render/turn-summary.js';

const EXIT_WORDS = new Set(['/exit', '/quit', 'exit', 'quit']);

/** `trellis chat`: an interactive session; text streams as it arrives, suspended calls are put to the user. */
export function registerChatCommand(program: Command, io: CliIo): void {
  program
    .command('chat')
    .description('talk to the agent interactively; streams replies, shows tool calls, asks before suspended calls run')
    .option('-s, --session <id>', 'continue this session instead of starting a new one')
    .action(async (options: { session?: string }) => {
      await withCliApp(io, async (cli) => {
        const session = openSession(cli, io, options.session);
        const reader = new LineReader(io.stdin);
        io.err(`trellis chat · session ${session.id} · /exit or Ctrl-D to leave`);
        const waiting = await waitingCalls(cli, session.id);
        if (waiting.length > 0) {
          io.err(
            `warning: session ${session.id} waits for approval of ${waiting.map((c) => `${c.tool} (${c.callId})`).join(', ')}; your next message cancels ${waiting.length === 1 ? 'it' : 'them'} (/exit, then ${cliCommand(io)} resume ${session.id}, to decide instead)`,
          );
        }
        try {
          await chatLoop(io, session, reader, cli.app.describe(), cli.approver);
        } finally {
          reader.close();
        }
      });
    });
}

async function chatLoop(
  io: CliIo,
  session: Session,
  reader: LineReader,
  app: AppDescription,
  approver: Approver,
): Promise<void> {
  for (;;) {
    io.write('you> ');
    const line = await reader.next();
    if (line === null || EXIT_WORDS.has(line.trim())) break;
    if (line.trim() === '') continue;
    const started = performance.now();
    const retries = { count: 0 };
    let result = await streamTurn(io, session, retries, () => session.send(line));
    while (result.status === 'suspended') {
      const decisions = await askDecisions(io, result, reader, app);
      if (!decisions) {
        io.out(
          `Still waiting for approval; decide later with: ${cliCommand(io)} resume ${session.id} --approve <callId>`,
        );
        return;
      }
      result = await streamTurn(io, session, retries, () => session.resume({ decisions, approver }));
    }
    io.out(summaryLine(result, performance.now() - started, session.id, retries.count));
  }
}

/** Runs a turn, printing text deltas as they arrive and tool activity (retries counted) on lines of their own. */
async function streamTurn(
  io: CliIo,
  session: Session,
  retries: { count: number },
  turn: () => Promise<TurnResult>,
): Promise<TurnResult> {
  let midLine = false;
  let streamed = false;
  const onEvent = (event: TrellisEvent): void => {
    if (event.type === 'model.delta' && event.delta.type === 'text') {
      if (!midLine) io.write('assistant> ');
      io.write(escapeControl(event.delta.text));
      midLine = true;
      streamed = true;
      return;
    }
    if (event.type === 'tool.retry') retries.count++;
    // A suspended call is put to the user right after the turn; one line for it, not two.
    const line = event.type === 'tool.suspended' ? undefined : toolActivityLine(event);
    if (!line) return;
    if (midLine) io.write('\n');
    midLine = false;
    io.out(line);
  };
  const subscription = session.events$.subscribe(onEvent);
  let result: TurnResult;
  try {
    result = (await interruptible(io, turn, sessionInterrupt(session))).value;
  } finally {
    subscription.unsubscribe();
  }
  if (midLine) io.write('\n');
  if (!streamed && result.reply !== undefined) io.out(`assistant> ${escapeControl(result.reply)}`);
  if (result.error && result.status !== 'completed')
    io.out(escapeControl(`(${result.status}: ${result.error.code}: ${result.error.message})`));
  return result;
}

/** Asks approve/reject for each waiting call; `undefined` when the input ended first. */
async function askDecisions(
  io: CliIo,
  result: TurnResult,
  reader: LineReader,
  app: AppDescription,
): Promise<Decision[] | undefined> {
  const decisions: Decision[] = [];
  for (const call of result.suspended ?? []) {
    const allowed = call.ticket.allowedDecisions ?? ['approve', 'reject', 'edit'];
    for (const line of approvalLines(call, app)) io.out(line);
    const approve = await askYesNo(io, reader, allowed.includes('approve'));
    if (approve === undefined) return undefined;
    decisions.push({ callId: call.callId, decision: approve ? 'approve' : 'reject' });
    io.out(approve ? `  approved ${call.callId}` : `  rejected ${call.callId}`);
  }
  return decisions;
}

/**
 * `approve? [y/n]` until the answer is clear: y/yes or n/no. Anything else asks again, so
 * an unclear answer never rejects a call, nor goes to the model as the next message.
 */
async function askYesNo(io: CliIo, reader: LineReader, approvable: boolean): Promise<boolean | undefined> {
  for (;;) {
    io.write(approvable ? 'approve? [y/n] ' : 'this call can only be rejected; reject? [n] ');
    const line = await reader.next();
    if (line === null) return undefined;
    const answer = line.trim();
    if (/^no?$/i.test(answer)) return false;
    if (/^y(es)?$/i.test(answer) && approvable) return true;
    io.out(
      approvable
        ? `  please answer y (run it) or n (do not run it), not '${escapeControl(clip(answer, 40))}'`
        : `  only n is possible here, not '${escapeControl(clip(answer, 40))}'`,
    );
  }
}
