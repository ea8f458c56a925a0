import { randomUUID } from 'node:crypto';
import type { Command } from 'commander';
import type { AppDescription, Session, TurnResult } from '../../../../index.js';
import { openSession, waitingCalls, withCliApp, type CliApp } from '../cli-app.js';
import { usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';
import { cliCommand } from '../invocation.js';
import { EXIT_INTERRUPTED, interruptible, sessionInterrupt, type TurnInterrupt } from '../interruptible.js';
import { openCliQueue, queuedSession, runQueuedTurn } from '../queued-turn.js';
import { toolActivityLine } from '../render/tool-activity.js';
import { pendingLines, replyLines, summaryLine } from '../render/turn-summary.js';

/** `trellis run <message>`: one turn; the reply and one summary line on stdout, tool activity on stderr. */
export function registerRunCommand(program: Command, io: CliIo): void {
  program
    .command('run')
    .description('send one message to the agent and print the reply and a summary line')
    .argument('<message>', 'the message to send')
    .option('-s, --session <id>', 'continue this session instead of starting a new one')
    .option(
      '-q, --queue',
      "send the turn to the config's queue for a `trellis worker` to run, instead of running it here",
    )
    .option(
      '--json',
      'print the turn result as one JSON object on stdout (status, reply, output, rounds, toolCalls, usage, …) instead of the reply and summary',
    )
    .action(async (message: string, options: { session?: string; queue?: boolean; json?: boolean }) => {
      if (message.trim() === '')
        throw usageError('run needs a message, and this one is empty', 'e.g. trellis run "Greet Ada"');
      await withCliApp(io, async (cli) => {
        if (options.queue) {
          const queue = await openCliQueue(cli);
          try {
            const sessionId = options.session ?? randomUUID();
            await warnCancelled(io, cli, sessionId);
            await printTurn(
              io,
              queuedSession(queue, sessionId),
              (signal) => runQueuedTurn(queue, sessionId, randomUUID(), { kind: 'send', message }, cli.context, signal),
              cli.app.describe(),
              { json: options.json },
            );
          } finally {
            await queue.queue.close();
          }
          return;
        }
        const session = openSession(cli, io, options.session);
        await warnCancelled(io, cli, session.id);
        await printTurn(io, session, () => session.send(message), cli.app.describe(), {
          interrupt: sessionInterrupt(session),
          json: options.json,
        });
      });
    });
}

/** A new message cancels the calls a session waits for: says so on stderr, naming them. */
export async function warnCancelled(io: CliIo, cli: CliApp, sessionId: string): Promise<void> {
  const waiting = await waitingCalls(cli, sessionId);
  if (waiting.length === 0) return;
  const calls = waiting.map((c) => `${c.tool} (${c.callId})`).join(', ');
  io.err(
    `warning: session ${sessionId} was waiting for approval of ${calls}; this new message cancels ${waiting.length === 1 ? 'it' : 'them'} (to decide instead: ${cliCommand(io)} resume ${sessionId} --approve/--reject <callId>)`,
  );
}

/**
 * Runs a turn (a send or a resume) with tool activity, retries included, on stderr, then prints
 * its outcome: the reply, what waits and a summary line; with `json`, the result as one JSON
 * object (a typed turn's `output` as plain JSON) for scripts. Ctrl-C stops it through
 * `interrupt` (a turn run here), else through the signal `turn` is given (a queued turn).
 */
export async function printTurn(
  io: CliIo,
  session: Pick<Session, 'id' | 'events$'>,
  turn: (signal: AbortSignal) => Promise<TurnResult>,
  app?: AppDescription,
  options: { readonly interrupt?: TurnInterrupt; readonly json?: boolean } = {},
): Promise<TurnResult> {
  const { interrupt, json = false } = options;
  let retries = 0;
  const activity = session.events$.subscribe((event) => {
    if (event.type === 'tool.retry') retries++;
    const line = toolActivityLine(event);
    if (line) io.err(line);
  });
  const started = performance.now();
  let result: TurnResult;
  try {
    const outcome = await interruptible(io, turn, interrupt);
    result = outcome.value;
    if (outcome.interrupted) io.exitCode = EXIT_INTERRUPTED;
  } finally {
    activity.unsubscribe();
  }
  if (json) {
    io.out(
      JSON.stringify(
        { sessionId: session.id, ...result, durationMs: Math.round(performance.now() - started) },
        null,
        2,
      ),
    );
  } else {
    for (const line of replyLines(result)) io.out(line);
    for (const line of pendingLines(result, session.id, app, cliCommand(io))) io.out(line);
    io.out(summaryLine(result, performance.now() - started, session.id, retries));
  }
  if (result.status === 'failed' && io.exitCode === 0) io.exitCode = 1;
  return result;
}
