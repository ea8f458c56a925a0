import { gcTail, type GcTail, type Span } from './gc-in-turns.js';
import { watchGcPauses } from './gc-pauses.js';
import { perRound } from './sequential.js';
import { blockSpread, summarize, type BlockSpread, type Summary } from './stats.js';

/** One configuration measured sequentially: its turn function and what its blocks gave. */
export interface Series {
  readonly label: string;
  readonly turn: (index: number) => Promise<number>;
  readonly samples: number[];
  readonly spans: Span[];
  /** Where each block's samples begin in `samples`. */
  readonly blockStarts: number[];
  cpuUs: number;
  runQueueMs: number;
  hooksPerTurn: number;
  blocks: number;
}

export interface SeriesFigures extends Summary {
  readonly label: string;
  /** Mean CPU time (user + system) per round: less disturbed by other processes than wall time. */
  readonly cpuUsPerRound: number;
  readonly hooksPerTurn: number;
  /** The GC pauses that fell inside the series' timed turns, and its samples without them. */
  readonly gc: GcTail;
  /** The blocks' medians and the spread of the samples inside their block. */
  readonly spread: BlockSpread;
  /** Time the thread waited for a CPU during the timed turns (other processes' share), as a share of their time; NaN off Linux. */
  readonly runQueueShare: number;
}

export function series(label: string, turn: (index: number) => Promise<number>): Series {
  return { label, turn, samples: [], spans: [], blockStarts: [], cpuUs: 0, runQueueMs: 0, hooksPerTurn: 0, blocks: 0 };
}

/**
 * Measures the series in alternating blocks (A B C, B C A, …), so a busy moment on the
 * machine hits all of them alike. Each block first warms up; every block asserts the work.
 * GC pauses are watched throughout and matched to each series' timed turns afterwards.
 */
export async function alternate(
  all: readonly Series[],
  blocks: number,
  turnsPerBlock: (s: Series) => number,
  warmup: (s: Series, block: number) => number,
): Promise<SeriesFigures[]> {
  const offsets = new Map<Series, number>();
  const gcWatch = watchGcPauses();
  for (let block = 0; block < blocks; block++) {
    // Rotate the order each block, so no series always runs right after the same one.
    const order = all.map((_, i) => all[(i + block) % all.length]!);
    for (const s of order) {
      const offset = offsets.get(s) ?? 0;
      const w = warmup(s, block);
      const n = turnsPerBlock(s);
      const r = await perRound(s.label, (i) => s.turn(offset + i), w, n);
      offsets.set(s, offset + w + n);
      s.blockStarts.push(s.samples.length);
      s.samples.push(...r.samples);
      s.spans.push(...r.spans);
      s.cpuUs += r.cpuUsPerRound * r.samples.length;
      s.runQueueMs += r.runQueueMs;
      s.hooksPerTurn = r.hooksPerTurn;
      s.blocks++;
    }
  }
  const pauses = await gcWatch.stop();
  return all.map((s) => {
    const gc = gcTail(s.samples, s.spans, pauses);
    return {
      label: s.label,
      ...summarize(s.samples),
      cpuUsPerRound: s.cpuUs / s.samples.length,
      hooksPerTurn: s.hooksPerTurn,
      gc,
      spread: blockSpread(s.samples, s.blockStarts),
      runQueueShare: s.runQueueMs / gc.timedMs,
    };
  });
}
