import type { Command } from 'commander';
import { withCliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { escapeControl } from '../render/terminal-text.js';
import { openCliQueue } from '../queued-turn.js';

/**
 * `trellis cancel <session> [--rollback]`: stops the turn of a session that a `trellis worker`
 * runs (the config's queue), from any machine: `TurnQueue.cancel`.
 */
export function registerCancelCommand(program: Command, io: CliIo): void {
  program
    .command('cancel')
    .description("stop a session's running turn on whichever `trellis worker` runs it (the config's queue)")
    .argument('<session>', 'the session id')
    .option('--rollback', 'discard the steps the turn completed, instead of keeping them in the transcript')
    .action(async (sessionId: string, flags: { rollback?: boolean }) => {
      await withCliApp(io, async (cli) => {
        const queue = await openCliQueue(cli);
        try {
          const { jobId } = await queue.queue.cancel(sessionId, { keepSteps: flags.rollback !== true });
          const id = escapeControl(sessionId);
          if (jobId === undefined) io.out(`No turn of session ${id} is running or queued: nothing to cancel.`);
          else
            io.out(
              `Cancelled turn ${escapeControl(jobId)} of session ${id}: it ends cancelled, ${flags.rollback ? 'rolled back (its steps discarded)' : 'keeping the steps it completed'}.`,
            );
        } finally {
          await queue.queue.close();
        }
      });
    });
}
