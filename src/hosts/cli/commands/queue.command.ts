import type { Command } from 'commander';
import { withCliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { escapeControl } from '../render/terminal-text.js';
import { openCliQueue } from '../queued-turn.js';

/**
 * `trellis queue parked | retry <job id> | drop <job id>`: the operator's view of the config's
 * turn queue — the turns parked as poison (each cut off `maxCrashes` times by a dying worker),
 * queued again once the cause is fixed, or dropped (`TurnQueue.parkedTurns`, `retryParked`,
 * `dropParked`).
 */
export function registerQueueCommand(program: Command, io: CliIo): void {
  const queueCommand = program
    .command('queue')
    .description("the config's turn queue, as an operator sees it: parked (poison) turns");
  queueCommand
    .command('parked')
    .description('list the turns parked as poison: every worker that ran them died')
    .option('--json', 'print them as a JSON array')
    .action(async (flags: { json?: boolean }) => {
      await withCliApp(io, async (cli) => {
        const { queue } = await openCliQueue(cli);
        try {
          const parked = await queue.parkedTurns();
          if (flags.json) return io.out(JSON.stringify(parked, null, 2));
          if (parked.length === 0) return io.out('No parked turns.');
          for (const turn of parked) {
            io.out(
              `${escapeControl(turn.jobId)}  ${turn.kind} of session ${escapeControl(turn.sessionId)} (agent ${escapeControl(turn.agent)}), parked ${turn.parkedAt} after ${turn.crashes} crashes`,
            );
            io.out(`  ${escapeControl(turn.reason)}`);
          }
          io.out(`Once the cause is fixed: trellis queue retry <job id> (or trellis queue drop <job id>)`);
        } finally {
          await queue.close();
        }
      });
    });
  queueCommand
    .command('retry')
    .description('queue a parked turn again, as a new job, and wait for its result')
    .argument('<jobId>', 'the parked job id, as `trellis queue parked` lists it')
    .action(async (jobId: string) => {
      await withCliApp(io, async (cli) => {
        const { queue } = await openCliQueue(cli);
        try {
          const queued = await queue.retryParked(jobId);
          io.err(`queued ${escapeControl(queued.jobId)} (the retry of ${escapeControl(jobId)}); waiting for a worker`);
          const done = await queued.result;
          if (done.kind !== 'cancel' && done.result.status === 'failed') io.exitCode = 1;
          io.out(
            done.kind === 'cancel'
              ? `Done: ${done.cancelled ? 'the waiting calls were cancelled' : 'nothing was waiting'}.`
              : `Done: ${done.result.status}${done.result.reply !== undefined ? `: ${escapeControl(done.result.reply)}` : ''}`,
          );
        } finally {
          await queue.close();
        }
      });
    });
  queueCommand
    .command('drop')
    .description('forget a parked turn without running it')
    .argument('<jobId>', 'the parked job id, as `trellis queue parked` lists it')
    .action(async (jobId: string) => {
      await withCliApp(io, async (cli) => {
        const { queue } = await openCliQueue(cli);
        try {
          await queue.dropParked(jobId);
          io.out(`Dropped parked turn ${escapeControl(jobId)}.`);
        } finally {
          await queue.close();
        }
      });
    });
}
