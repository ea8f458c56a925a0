import { gcTail, type GcTail, type Span } from './gc-in-turns.js';
import { watchGcPauses } from './gc-pauses.js';
import { summarize, type Summary } from './stats.js';
import { assertWork, replyClock, resetCounters, ROUNDS_PER_TURN } from './workload.js';

/** Rounds timed one by one: µs from one model reply to the next. */
export interface RoundFigures extends Summary {
  readonly label: string;
  /** The GC pauses that fell inside the timed rounds, and the rounds without them. */
  readonly gc: GcTail;
}

interface RoundSeries {
  readonly label: string;
  readonly turn: (index: number) => Promise<number>;
}

/**
 * Times each round of `turns` turns (after `warmup` untimed ones) by the clock reads the
 * workload's script takes at every reply (`replyClock`): a round is the time from one
 * reply to the next, 20 per turn (the session's opening before the first reply and the
 * answer after the last are outside). Each round then carries one clock read (~45 ns),
 * which is why this is its own measurement and not figure 1's.
 */
async function timeRounds(
  s: RoundSeries,
  first: number,
  warmup: number,
  turns: number,
  samples: number[],
  spans: Span[],
): Promise<void> {
  replyClock.enabled = true;
  try {
    for (let i = 0; i < warmup; i++) await s.turn(first + i);
    resetCounters();
    for (let i = 0; i < turns; i++) {
      replyClock.count = 0;
      await s.turn(first + warmup + i);
      if (replyClock.count !== ROUNDS_PER_TURN)
        throw new Error(`${s.label}: ${replyClock.count} replies in a turn, expected ${ROUNDS_PER_TURN}`);
      for (let k = 1; k < replyClock.count; k++) {
        const start = replyClock.marks[k - 1]!;
        const end = replyClock.marks[k]!;
        samples.push((end - start) * 1000);
        spans.push({ start, end });
      }
      assertWork(i + 1, `${s.label} (rounds timed one by one), turn ${i + 1}`);
    }
  } finally {
    replyClock.enabled = false;
  }
}

/** Each series in `blocks` alternating blocks of `turnsPerBlock(s)` turns, GC pauses watched throughout. */
export async function roundTimes(
  all: readonly RoundSeries[],
  blocks: number,
  turnsPerBlock: (s: RoundSeries) => number,
  warmup: number,
): Promise<RoundFigures[]> {
  const samples = all.map((): number[] => []);
  const spans = all.map((): Span[] => []);
  const next = all.map(() => 0);
  const gcWatch = watchGcPauses();
  for (let block = 0; block < blocks; block++) {
    for (let j = 0; j < all.length; j++) {
      const at = (j + block) % all.length;
      const s = all[at]!;
      const n = turnsPerBlock(s);
      await timeRounds(s, next[at]!, warmup, n, samples[at]!, spans[at]!);
      next[at] = next[at]! + warmup + n;
    }
  }
  const pauses = await gcWatch.stop();
  return all.map((s, i) => ({ label: s.label, ...summarize(samples[i]!), gc: gcTail(samples[i]!, spans[i]!, pauses) }));
}
