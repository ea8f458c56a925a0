import { createHash } from 'node:crypto';
import type { Command } from 'commander';
import { TrellisError, type Decision } from '../../../../index.js';
import { openSession, reviewedSuspension, waitingCalls, withCliApp } from '../cli-app.js';
import { usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';
import { cliCommand } from '../invocation.js';
import { sortDecisions } from '../decided-calls.js';
import { openCliQueue, queuedSession, runQueuedTurn } from '../queued-turn.js';
import { printTurn } from './run.command.js';
import { sessionInterrupt } from '../interruptible.js';

const collect = (value: string, previous: string[]): string[] => [...previous, value];

interface ResumeFlags {
  readonly approve: string[];
  readonly reject: string[];
  readonly edit: string[];
  readonly retry: string[];
  readonly skip: string[];
  readonly message?: string;
  readonly reason?: string;
  readonly queue?: boolean;
}

/** `trellis resume <session> --approve <callId> --reject <callId> --edit <callId>=<json>`: decides suspended calls, from any process. */
export function registerResumeCommand(program: Command, io: CliIo): void {
  program
    .command('resume')
    .description('decide on calls a session is waiting for, and continue its turn')
    .argument('<session>', 'the session id (see `trellis sessions`)')
    .option('--approve <callId>', 'run this waiting call (repeatable)', collect, [])
    .option('--reject <callId>', 'never run this waiting call (repeatable)', collect, [])
    .option(
      '--edit <callId=json>',
      'run this waiting call with these arguments instead, a JSON object (repeatable)',
      collect,
      [],
    )
    .option(
      '--retry <callId>',
      'run again a call a crash cut off mid-run; it gets the same idempotency key (repeatable)',
      collect,
      [],
    )
    .option(
      '--skip <callId>',
      'do not run again a call a crash cut off mid-run; it is reported skipped (repeatable)',
      collect,
      [],
    )
    .option('-m, --message <text>', 'with --reject: what the model is told')
    .option('-r, --reason <text>', 'why you decided, for the audit log (some approval policies require one)')
    .option(
      '-q, --queue',
      "send the resume to the config's queue for a `trellis worker` to run, instead of running it here",
    )
    .action(async (sessionId: string, flags: ResumeFlags) => {
      const decisions = decisionsOf(flags);
      if (decisions.length === 0)
        throw usageError(
          'resume needs at least one --approve <callId>, --reject <callId>, --edit <callId>=<json>, --retry <callId> or --skip <callId>',
          `See the waiting calls with: trellis sessions show ${sessionId}`,
        );
      await withCliApp(io, async (cli) => {
        const stored = await cli.store.load(sessionId);
        if (!stored)
          throw new TrellisError('SessionNotFound', `No session '${sessionId}' in ${cli.storePath}`, {
            hint: 'List sessions with: trellis sessions',
          });
        const { toApply, alreadyDecided, unknown } = sortDecisions(decisions, stored, reviewedSuspension(stored));
        if (unknown.length > 0) {
          const waiting = (await waitingCalls(cli, sessionId)).map((c) => c.callId);
          throw new TrellisError(
            'InvalidDecision',
            `Session ${sessionId} has no call ${unknown.join(', ')}${waiting.length > 0 ? `; it waits for ${waiting.join(', ')}` : ', and nothing in it waits for a decision'}`,
            {
              hint: `See its calls with: trellis sessions show ${sessionId}`,
            },
          );
        }
        const some = alreadyDecided.length === 1 ? `${alreadyDecided[0]} was` : `${alreadyDecided.join(', ')} were`;
        if (toApply.length === 0) {
          // A decision applied twice changes nothing: say so, and succeed.
          io.out(`Nothing to do: ${some} already decided (see ${cliCommand(io)} sessions show ${sessionId})`);
          return;
        }
        if (alreadyDecided.length > 0) io.err(`note: ${some} already decided; deciding the rest`);
        if (flags.queue) {
          const queue = await openCliQueue(cli);
          try {
            // The key names the session's revision and the decisions: the same resume enqueued twice runs once.
            const key = `decide-r${stored.revision}-${createHash('sha256').update(JSON.stringify(toApply)).digest('hex').slice(0, 16)}`;
            await printTurn(
              io,
              queuedSession(queue, sessionId),
              (signal) =>
                runQueuedTurn(
                  queue,
                  sessionId,
                  key,
                  { kind: 'resume', decisions: toApply, approver: cli.approver },
                  cli.context,
                  signal,
                ),
              cli.app.describe(),
            );
          } finally {
            await queue.queue.close();
          }
          return;
        }
        const session = openSession(cli, io, sessionId);
        await printTurn(
          io,
          session,
          () => session.resume({ decisions: toApply, approver: cli.approver }),
          cli.app.describe(),
          { interrupt: sessionInterrupt(session) },
        );
      });
    });
}

/** The decisions the flags ask for; the same call decided two ways, or an --edit that is not `<callId>=<JSON object>`, is refused. */
export function decisionsOf(flags: ResumeFlags): Decision[] {
  const edits = flags.edit.map(parseEdit);
  const kinds = new Map<string, Set<string>>();
  const note = (callId: string, kind: string) => kinds.set(callId, (kinds.get(callId) ?? new Set()).add(kind));
  for (const callId of flags.approve) note(callId, 'approved');
  for (const callId of flags.reject) note(callId, 'rejected');
  for (const edit of edits) note(edit.callId, 'edited');
  for (const callId of flags.retry ?? []) note(callId, 'retried');
  for (const callId of flags.skip ?? []) note(callId, 'skipped');
  for (const [callId, set] of kinds) {
    if (set.size > 1)
      throw usageError(
        `The same call cannot be both ${[...set].join(' and ')}: ${callId}`,
        'Give each call one decision',
      );
  }
  const decisions: Decision[] = [
    ...flags.approve.map((callId) => ({ callId, decision: 'approve' as const })),
    ...flags.reject.map((callId) => ({
      callId,
      decision: 'reject' as const,
      ...(flags.message ? { message: flags.message } : {}),
    })),
    ...edits,
    ...(flags.retry ?? []).map((callId) => ({ callId, decision: 'retry' as const })),
    ...(flags.skip ?? []).map((callId) => ({ callId, decision: 'skip' as const })),
  ];
  return flags.reason ? decisions.map((d) => ({ ...d, reason: flags.reason })) : decisions;
}

function parseEdit(value: string): Decision {
  const at = value.indexOf('=');
  const callId = at < 0 ? '' : value.slice(0, at).trim();
  if (!callId) throw usageError(`--edit takes <callId>=<json>, got '${value}'`, `e.g. --edit call_1='{"limit":5}'`);
  let args: unknown;
  try {
    args = JSON.parse(value.slice(at + 1));
  } catch (error) {
    throw usageError(
      `--edit ${callId}: the arguments are not valid JSON (${error instanceof Error ? error.message : 'unreadable'})`,
      `Give a JSON object, e.g. --edit ${callId}='{"limit":5}'`,
    );
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw usageError(
      `--edit ${callId}: the arguments must be a JSON object, got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : typeof args}`,
      `e.g. --edit ${callId}='{"limit":5}'`,
    );
  }
  return { callId, decision: 'edit', args };
}
