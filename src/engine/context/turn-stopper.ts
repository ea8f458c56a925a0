import { TrellisError } from '../../errors/trellis-error.js';
import { NEVER_ABORTED } from './never-signal.js';

/**
 * How one turn is stopped: by `session.cancel()` or by the caller's signal. Its `signal` goes
 * to the model call and is checked at every step boundary; tools and hooks see it only when
 * the caller gave a signal (then either stops them), so a turn sent without one keeps the
 * tool fast path (no listener, no race per call) and a running tool call finishes before the
 * turn stops.
 */
export class TurnStopper {
  readonly #controller = new AbortController();
  readonly #caller: AbortSignal | undefined;
  #keepSteps = false;
  #deadline: ReturnType<typeof setTimeout> | undefined;
  readonly #follow = (): void => this.#controller.abort(this.#caller!.reason);

  constructor(caller: AbortSignal | undefined) {
    this.#caller = caller;
    if (caller === undefined) return;
    if (caller.aborted) this.#controller.abort(caller.reason);
    else caller.addEventListener('abort', this.#follow, { once: true });
  }

  /** Aborted when the turn is to stop: the model call's signal. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** What tools and hooks see: this turn's signal when the caller gave one, else one that never aborts. */
  get toolSignal(): AbortSignal {
    return this.#caller === undefined ? NEVER_ABORTED : this.#controller.signal;
  }

  /** Whether the turn, once stopped, keeps the steps it completed (`session.cancel()`), or discards them (the caller's signal, a rollback). */
  get keepsSteps(): boolean {
    return this.#keepSteps;
  }

  /** Stops the turn; false when it was stopped already. */
  stop(keepSteps: boolean): boolean {
    if (this.#controller.signal.aborted) return false;
    this.#keepSteps = keepSteps;
    this.#controller.abort(
      new TrellisError('Cancelled', 'The turn was cancelled', { hint: 'Send the message again to retry' }),
    );
    return true;
  }

  /** Stops the turn with `reason` (steps discarded) once `ms` have passed, unless it ends first; the first deadline set holds. */
  expireAfter(ms: number, reason: unknown): void {
    if (this.#deadline !== undefined || this.#controller.signal.aborted) return;
    this.#deadline = setTimeout(() => this.#controller.signal.aborted || this.#controller.abort(reason), ms);
    this.#deadline.unref();
  }

  /** The turn ended: stops following the caller's signal, and its deadline. */
  dispose(): void {
    if (this.#deadline !== undefined) clearTimeout(this.#deadline);
    this.#caller?.removeEventListener('abort', this.#follow);
  }
}
