import type { Command } from 'commander';
import type { Decision } from '../../agent/turn-result.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { openAgent, withCliApp } from '../cli-app.js';
import { usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';
import { printTurn } from './run.command.js';

const collect = (value: string, previous: string[]): string[] => [...previous, value];

interface ResumeFlags {
  readonly approve: string[];
  readonly reject: string[];
  readonly message?: string;
}

/** `trellis resume <session> --approve <callId> --reject <callId>`: decides suspended calls, from any process. */
export function registerResumeCommand(program: Command, io: CliIo): void {
  program
    .command('resume')
    .description('decide on calls a session is waiting for, and continue its turn')
    .argument('<session>', 'the session id (see `trellis sessions`)')
    .option('--approve <callId>', 'run this waiting call (repeatable)', collect, [])
    .option('--reject <callId>', 'never run this waiting call (repeatable)', collect, [])
    .option('-m, --message <text>', 'with --reject: what the model is told')
    .action(async (sessionId: string, flags: ResumeFlags) => {
      const decisions: Decision[] = [
        ...flags.approve.map((callId) => ({ callId, decision: 'approve' as const })),
        ...flags.reject.map((callId) => ({ callId, decision: 'reject' as const, ...(flags.message ? { message: flags.message } : {}) })),
      ];
      if (decisions.length === 0) throw usageError('resume needs at least one --approve <callId> or --reject <callId>', `See the waiting calls with: trellis sessions show ${sessionId}`);
      await withCliApp(io, async (cli) => {
        if (!(await cli.app.store!.load(sessionId))) {
          throw new TrellisError('SessionNotFound', `No session '${sessionId}' in ${cli.storePath}`, { hint: 'List sessions with: trellis sessions' });
        }
        const session = openAgent(cli, io).session(sessionId);
        await printTurn(io, session, () => session.resume({ decisions }));
      });
    });
}
