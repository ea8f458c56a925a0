import { setTimeout as sleep } from 'node:timers/promises';
import { TrellisError } from '../../../index.js';

/**
 * Counts the turns running through injected agents so shutdown can drain them: new turns
 * are refused once draining starts; turns still running at the deadline are aborted (they
 * end `cancelled` and checkpoint as usual).
 */
export class TurnTracker {
  readonly #running = new Map<Promise<unknown>, AbortController>();
  #draining = false;

  /** How many turns are running now. */
  get running(): number {
    return this.#running.size;
  }

  /** Runs one turn with a signal that fires when the caller's does or when shutdown gives up waiting. */
  track<T>(signal: AbortSignal | undefined, work: (signal: AbortSignal) => Promise<T>): Promise<T> {
    if (this.#draining) {
      return Promise.reject(
        new TrellisError('NotStarted', 'The Nest application is shutting down; no new turns are accepted', {
          hint: 'Retry against another instance',
        }),
      );
    }
    const controller = new AbortController();
    const combined = signal ? AbortSignal.any([signal, controller.signal]) : controller.signal;
    const run = work(combined);
    this.#running.set(run, controller);
    const forget = () => this.#running.delete(run);
    run.then(forget, forget);
    return run;
  }

  /** Refuses new turns, waits up to `timeoutMs` for running ones, then aborts the rest and waits for them to end. */
  async drain(timeoutMs: number): Promise<{ finished: number; aborted: number }> {
    this.#draining = true;
    const before = this.#running.size;
    const settled = Promise.allSettled([...this.#running.keys()]);
    const timer = new AbortController();
    const inTime = await Promise.race([
      settled.then(() => true),
      sleep(timeoutMs, false, { signal: timer.signal }).catch(() => false),
    ]);
    timer.abort();
    if (inTime) return { finished: before, aborted: 0 };
    const left = [...this.#running.entries()];
    for (const [, controller] of left)
      controller.abort(
        new TrellisError('Cancelled', `The application shut down after waiting ${timeoutMs} ms for this turn`),
      );
    await Promise.allSettled(left.map(([run]) => run));
    return { finished: before - left.length, aborted: left.length };
  }
}
