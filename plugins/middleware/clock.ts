/** A source of the current time in epoch milliseconds, like `Date.now`. */
export type Clock = () => number;

/**
 * DI token for the {@link Clock} that time-based middleware (rate limit, cache) reads.
 * Unbound, they fall back to `Date.now`; tests bind a controllable function instead.
 *
 * @example
 * let now = 0;
 * container.bind<Clock>(CLOCK).toConstantValue(() => now);
 */
export const CLOCK = Symbol.for('trellis.clock');
