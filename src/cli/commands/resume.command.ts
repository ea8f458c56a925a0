import type { Command } from 'commander';
import type { Decision } from '../../agent/turn-result.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { hasSuspendedTurn, openSession, withCliApp } from '../cli-app.js';
import { usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';
import { printTurn } from './run.command.js';

const collect = (value: string, previous: string[]): string[] => [...previous, value];

interface ResumeFlags {
  readonly approve: string[];
  readonly reject: string[];
  readonly edit: string[];
  readonly message?: string;
}

/** `trellis resume <session> --approve <callId> --reject <callId> --edit <callId>=<json>`: decides suspended calls, from any process. */
export function registerResumeCommand(program: Command, io: CliIo): void {
  program
    .command('resume')
    .description('decide on calls a session is waiting for, and continue its turn')
    .argument('<session>', 'the session id (see `trellis sessions`)')
    .option('--approve <callId>', 'run this waiting call (repeatable)', collect, [])
    .option('--reject <callId>', 'never run this waiting call (repeatable)', collect, [])
    .option('--edit <callId=json>', 'run this waiting call with these arguments instead, a JSON object (repeatable)', collect, [])
    .option('-m, --message <text>', 'with --reject: what the model is told')
    .action(async (sessionId: string, flags: ResumeFlags) => {
      const decisions = decisionsOf(flags);
      if (decisions.length === 0) throw usageError('resume needs at least one --approve <callId>, --reject <callId> or --edit <callId>=<json>', `See the waiting calls with: trellis sessions show ${sessionId}`);
      await withCliApp(io, async (cli) => {
        if (!(await cli.store.load(sessionId))) {
          throw new TrellisError('SessionNotFound', `No session '${sessionId}' in ${cli.storePath}`, { hint: 'List sessions with: trellis sessions' });
        }
        if (!(await hasSuspendedTurn(cli, sessionId))) {
          throw new TrellisError('InvalidDecision', `Nothing in session ${sessionId} is waiting for a decision`, { hint: `See what happened with: trellis sessions show ${sessionId}` });
        }
        const session = openSession(cli, io, sessionId);
        await printTurn(io, session, (signal) => session.resume({ decisions, signal }), cli.app.describe());
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
  for (const [callId, set] of kinds) {
    if (set.size > 1) throw usageError(`The same call cannot be both ${[...set].join(' and ')}: ${callId}`, 'Give each call one decision');
  }
  return [
    ...flags.approve.map((callId) => ({ callId, decision: 'approve' as const })),
    ...flags.reject.map((callId) => ({ callId, decision: 'reject' as const, ...(flags.message ? { message: flags.message } : {}) })),
    ...edits,
  ];
}

function parseEdit(value: string): Decision {
  const at = value.indexOf('=');
  const callId = at < 0 ? '' : value.slice(0, at).trim();
  if (!callId) throw usageError(`--edit takes <callId>=<json>, got '${value}'`, `e.g. --edit call_1='{"limit":5}'`);
  let args: unknown;
  try {
    args = JSON.parse(value.slice(at + 1));
  } catch (error) {
    throw usageError(`--edit ${callId}: the arguments are not valid JSON (${error instanceof Error ? error.message : 'unreadable'})`, `Give a JSON object, e.g. --edit ${callId}='{"limit":5}'`);
  }
  if (typeof args !== 'object' || args === null || Array.isArray(args)) {
    throw usageError(`--edit ${callId}: the arguments must be a JSON object, got ${args === null ? 'null' : Array.isArray(args) ? 'an array' : typeof args}`, `e.g. --edit ${callId}='{"limit":5}'`);
  }
  return { callId, decision: 'edit', args };
}
