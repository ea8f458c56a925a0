import type { Span } from './gc-in-turns.js';
import { performanceClockOrigin } from './gc-pauses.js';
import { runQueueWaitNs } from './run-queue.js';
import { summarize, type Summary } from './stats.js';
import { assertWork, counters, resetCounters } from './workload.js';

/**
 * Runs `turn` one after another: `warmup` untimed, then `count` timed; µs per round of each
 * turn, and each turn's start and end on the `performance.now()` clock (ms), to match GC
 * pauses against (the turn is timed with `hrtime`; the span is placed from the same reads).
 * `runQueueMs`: how long the thread waited for a CPU during the timed turns (NaN off Linux).
 */
export async function perRound(
  label: string,
  turn: (index: number) => Promise<number>,
  warmup: number,
  count: number,
): Promise<
  Summary & { samples: number[]; spans: Span[]; hooksPerTurn: number; cpuUsPerRound: number; runQueueMs: number }
> {
  for (let i = 0; i < warmup; i++) await turn(i);
  resetCounters();
  const origin = performanceClockOrigin();
  const samples: number[] = [];
  const spans: Span[] = [];
  let rounds = 0;
  const waited = runQueueWaitNs();
  const cpu = process.cpuUsage();
  for (let i = 0; i < count; i++) {
    const started = process.hrtime.bigint();
    const n = await turn(warmup + i);
    const ended = process.hrtime.bigint();
    const elapsed = Number(ended - started) / 1000;
    samples.push(elapsed / n);
    spans.push({ start: Number(started - origin) / 1e6, end: Number(ended - origin) / 1e6 });
    rounds += n;
    // Every turn, not just the total: 20 tool calls, 60 middleware calls, 21 transforms.
    assertWork(i + 1, `${label}, turn ${i + 1}`);
  }
  const used = process.cpuUsage(cpu);
  const runQueueMs = ((runQueueWaitNs() ?? NaN) - (waited ?? NaN)) / 1e6;
  return {
    ...summarize(samples),
    samples,
    spans,
    hooksPerTurn: counters.hooks / count,
    cpuUsPerRound: (used.user + used.system) / rounds,
    runQueueMs,
  };
}
