import type { SessionStore } from '../../../../index.js';

/** A store write the process counts: a journal step or a checkpoint. */
const WRITES = new Set(['appendSteps', 'checkpoint']);

/**
 * A store whose process "dies" (in this process, for in-process tests): once dead, every
 * call on it hangs forever, as calls of a killed process never come back; what was written
 * before stays in the store underneath. `dieAfterWrite(n)` lets the n-th write land and then
 * dies before its caller hears of it — a crash exactly at a step boundary.
 */
export interface DyingStore {
  readonly store: SessionStore;
  /** Writes so far. */
  readonly writes: () => number;
  dieAfterWrite(n: number): void;
  die(): void;
  readonly dead: () => boolean;
}

const NEVER = new Promise<never>(() => undefined);

export function dyingStore(real: SessionStore): DyingStore {
  let writes = 0;
  let dieAt = Infinity;
  let dead = false;
  const store = new Proxy(real, {
    get(target, prop) {
      const value = Reflect.get(target, prop, target) as unknown;
      if (typeof value !== 'function') return value;
      const method = value as (...args: unknown[]) => unknown;
      return (...args: unknown[]) => {
        if (dead) return NEVER;
        if (!WRITES.has(String(prop))) return method.apply(target, args);
        return (method.apply(target, args) as Promise<unknown>).then((out) => {
          writes++;
          if (writes >= dieAt) dead = true;
          return dead ? NEVER : out;
        });
      };
    },
  });
  return {
    store,
    writes: () => writes,
    dieAfterWrite: (n) => {
      dieAt = n;
    },
    die: () => {
      dead = true;
    },
    dead: () => dead,
  };
}
