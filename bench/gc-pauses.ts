import { constants, performance, PerformanceObserver } from 'node:perf_hooks';
import { setImmediate as nextLoopTurn } from 'node:timers/promises';

/** Which collector paused the main thread: a young-generation one, or a full one (with its incremental marking and weak-callback passes). */
export type GcKind = 'scavenge' | 'mark-compact';

/** One main-thread GC pause, in milliseconds on the `performance.now()` clock. */
export interface GcPause {
  readonly start: number;
  readonly duration: number;
  readonly kind: GcKind;
}

/** Collects the process's GC pauses from now until `stop()`. */
export interface GcPauseWatch {
  /** Stops watching and answers every pause seen, in time order. */
  stop(): Promise<GcPause[]>;
}

/**
 * Watches GC pauses through `PerformanceObserver` (entry type `'gc'`). Node creates an entry
 * on the event loop after the GC, so a series that never yields gets its entries only at
 * the end; `stop()` waits for the loop to deliver them before it disconnects.
 */
export function watchGcPauses(): GcPauseWatch {
  const pauses: GcPause[] = [];
  const observer = new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) pauses.push(toPause(entry));
  });
  observer.observe({ entryTypes: ['gc'] });
  return {
    async stop() {
      // Entries are queued by an immediate, then handed to the observer by another.
      let seen = -1;
      while (seen !== pauses.length) {
        seen = pauses.length;
        for (let i = 0; i < 3; i++) await nextLoopTurn();
      }
      for (const entry of observer.takeRecords()) pauses.push(toPause(entry));
      observer.disconnect();
      return pauses.sort((a, b) => a.start - b.start);
    },
  };
}

function toPause(entry: { startTime: number; duration: number; detail?: unknown }): GcPause {
  const kind = (entry.detail as { kind?: number } | undefined)?.kind;
  const minor = kind === constants.NODE_PERFORMANCE_GC_MINOR || kind === 2; // 2: V8's minor mark-compact
  return { start: entry.startTime, duration: entry.duration, kind: minor ? 'scavenge' : 'mark-compact' };
}

/**
 * `process.hrtime.bigint()` at `performance.now()` zero, so turns timed with the first can be
 * placed on the second's clock (both read the same monotonic clock). Taken from the tightest
 * of many bracketing reads: a careless offset (one read after the other) was a few µs off,
 * enough to place a pause that began right after a turn inside it.
 */
export function performanceClockOrigin(tries = 200): bigint {
  let origin = 0n;
  let tightest = Infinity;
  for (let i = 0; i < tries; i++) {
    const before = process.hrtime.bigint();
    const now = performance.now();
    const after = process.hrtime.bigint();
    const width = Number(after - before);
    if (width < tightest) {
      tightest = width;
      origin = (before + after) / 2n - BigInt(Math.round(now * 1e6));
    }
  }
  return origin;
}
