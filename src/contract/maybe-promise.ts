/** A value now, or later: what a step returns when its hooks may or may not await. */
export type MaybePromise<T> = T | Promise<T>;

/**
 * Continues with `next` (a method of `self`) once `value` is there: at once when it is a
 * plain value, in the promise's `then` when it is a promise. The kernel's steps are written
 * with it instead of an `instanceof Promise` fork each, so a step whose hooks answer
 * synchronously costs no promise and no closure (the method is passed, not wrapped).
 *
 * @example return andThen(this, hooks.run('tool.before_call', info, site), this.validate);
 */
export function andThen<S, T, R>(
  self: S,
  value: MaybePromise<T>,
  next: (this: S, value: T) => MaybePromise<R>,
): MaybePromise<R> {
  return value instanceof Promise ? value.then((reached: T) => next.call(self, reached)) : next.call(self, value);
}
