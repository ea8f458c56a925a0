import { TrellisError, type Session } from '../../../index.js';
import type { CliIo } from './cli-io.js';

/** The exit code of a process stopped by Ctrl-C (128 + SIGINT), as shells report it. */
export const EXIT_INTERRUPTED = 130;

/** How long the second Ctrl-C waits for the session's lease to be given up before the process exits anyway. */
const ABANDON_WAIT_MS = 2_000;

/** How Ctrl-C reaches a turn that runs in this process (see {@link sessionInterrupt}). */
export interface TurnInterrupt {
  /** The first Ctrl-C: stop the turn. Returns a note for the user, if any. */
  stop(): string | undefined;
  /** The second Ctrl-C, before the process exits: give up what the turn holds. */
  abandon(): Promise<unknown>;
  /** The turn ended: stop watching it. */
  close(): void;
}

/**
 * Ctrl-C for a turn of `session` run here (`run`, `resume`, `chat`), which is given no
 * signal. The first press stops it with `session.cancel()`: the model call stops at once, and a
 * tool call that is running finishes rather than being abandoned half-way, so what it did is
 * known. Once a tool call of the turn has started, the turn keeps its steps: the transcript
 * records each call and its result (a call that had not finished is answered `Cancelled`);
 * before that it is rolled back and appends nothing. The second press gives the session's
 * lease up (`session.abandon()`), so the session is free the moment the process is gone; a
 * call cut off there comes back as a `retry` / `skip` decision.
 */
export function sessionInterrupt(session: Pick<Session, 'cancel' | 'abandon' | 'events$'>): TurnInterrupt {
  let started = false;
  const running = new Map<string, string>();
  const watch = session.events$.subscribe((event) => {
    if (event.type === 'tool.started') {
      started = true;
      running.set(event.callId, event.tool);
    } else if (event.type === 'tool.finished') running.delete(event.callId);
  });
  return {
    stop: () => {
      session.cancel({ keepSteps: started });
      if (running.size === 0) return undefined;
      return `Waiting for the running tool call${running.size === 1 ? '' : 's'} (${[...new Set(running.values())].join(', ')}) to finish, so the session records what ${running.size === 1 ? 'it' : 'they'} did.`;
    },
    abandon: () => session.abandon(),
    close: () => watch.unsubscribe(),
  };
}

/**
 * Runs one turn (a send or a resume) so that Ctrl-C stops it cleanly. The first Ctrl-C stops
 * the turn — through `interrupt` for a turn run here, else by aborting the signal handed to
 * `run` (a queued turn: the waiting stops) — and waits for it to end as `cancelled`. The second
 * gives up what the turn holds (its session's lease, for at most 2 s) and exits with code 130.
 * Outside a turn, Ctrl-C keeps its default meaning (the process ends). Without
 * `io.onInterrupt` (tests, embedded use) the turn simply runs. Resolves to the turn's value
 * and whether Ctrl-C was pressed.
 */
export async function interruptible<T>(
  io: CliIo,
  run: (signal: AbortSignal) => Promise<T>,
  interrupt?: TurnInterrupt,
): Promise<{ readonly value: T; readonly interrupted: boolean }> {
  const controller = new AbortController();
  let presses = 0;
  const off = io.onInterrupt?.(() => {
    presses += 1;
    if (presses === 1) {
      io.err('Cancelling the turn… (press Ctrl-C again to exit at once)');
      if (interrupt === undefined) {
        controller.abort(new TrellisError('Cancelled', 'The turn was cancelled with Ctrl-C'));
        return;
      }
      const note = interrupt.stop();
      if (note !== undefined) io.err(note);
      return;
    }
    if (presses > 2) return;
    io.err('Exiting now.');
    void exitAfter(io, interrupt);
  });
  try {
    const value = await run(controller.signal);
    return { value, interrupted: presses > 0 };
  } finally {
    off?.();
    interrupt?.close();
  }
}

/** Gives up what the turn holds (bounded, never throwing), then exits with 130. */
async function exitAfter(io: CliIo, interrupt: TurnInterrupt | undefined): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  try {
    if (interrupt !== undefined)
      await Promise.race([
        interrupt.abandon(),
        new Promise((resolve) => (timer = setTimeout(resolve, ABANDON_WAIT_MS))),
      ]);
  } catch (error) {
    io.err(
      `Could not give up the session's lease (${error instanceof Error ? error.message : String(error)}); it expires by itself.`,
    );
  } finally {
    clearTimeout(timer);
    io.exitNow?.(EXIT_INTERRUPTED);
  }
}
