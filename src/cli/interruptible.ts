import { TrellisError } from '../../index.js';
import type { CliIo } from './cli-io.js';

/** The exit code of a process stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const EXIT_INTERRUPTED = 130;

/**
 * Runs one turn (a send or a resume) so that Ctrl-C stops it cleanly. The first Ctrl-C
 * aborts the turn's `AbortSignal` and waits for the turn to end as `cancelled` — the
 * session keeps what it had, and a resume leaves a record that can still be decided.
 * The second exits at once with code 130. Outside a turn, Ctrl-C keeps its default
 * meaning (the process ends). Without `io.onInterrupt` (tests, embedded use) the turn
 * simply runs. Resolves to the turn's value and whether Ctrl-C was pressed.
 */
export async function interruptible<T>(io: CliIo, run: (signal: AbortSignal) => Promise<T>): Promise<{ readonly value: T; readonly interrupted: boolean }> {
  const controller = new AbortController();
  let presses = 0;
  const off = io.onInterrupt?.(() => {
    presses += 1;
    if (presses === 1) {
      io.err('Cancelling the turn… (press Ctrl-C again to exit at once)');
      controller.abort(new TrellisError('Cancelled', 'The turn was cancelled with Ctrl-C'));
      return;
    }
    io.err('Exiting now.');
    io.exitNow?.(EXIT_INTERRUPTED);
  });
  try {
    const value = await run(controller.signal);
    return { value, interrupted: presses > 0 };
  } finally {
    off?.();
  }
}
