import { perRound } from './sequential.js';
import { summarize, type Summary } from './stats.js';

/** One configuration measured sequentially: its turn function and what its blocks gave. */
export interface Series {
  readonly label: string;
  readonly turn: (index: number) => Promise<number>;
  readonly samples: number[];
  cpuUs: number;
  hooksPerTurn: number;
  blocks: number;
}

export interface SeriesFigures extends Summary {
  readonly label: string;
  /** Mean CPU time (user + system) per round: less disturbed by other processes than wall time. */
  readonly cpuUsPerRound: number;
  readonly hooksPerTurn: number;
}

export function series(label: string, turn: (index: number) => Promise<number>): Series {
  return { label, turn, samples: [], cpuUs: 0, hooksPerTurn: 0, blocks: 0 };
}

/**
 * Measures the series in alternating blocks (A B C, B C A, …), so a busy moment on the
 * machine hits all of them alike. Each block first warms up; every block asserts the work.
 */
export async function alternate(all: readonly Series[], blocks: number, turnsPerBlock: (s: Series) => number, warmup: (s: Series, block: number) => number): Promise<SeriesFigures[]> {
  const offsets = new Map<Series, number>();
  for (let block = 0; block < blocks; block++) {
    // Rotate the order each block, so no series always runs right after the same one.
    const order = all.map((_, i) => all[(i + block) % all.length]!);
    for (const s of order) {
      const offset = offsets.get(s) ?? 0;
      const w = warmup(s, block);
      const n = turnsPerBlock(s);
      const r = await perRound(s.label, (i) => s.turn(offset + i), w, n);
      offsets.set(s, offset + w + n);
      s.samples.push(...r.samples);
      s.cpuUs += r.cpuUsPerRound * r.samples.length;
      s.hooksPerTurn = r.hooksPerTurn;
      s.blocks++;
    }
  }
  return all.map((s) => ({ label: s.label, ...summarize(s.samples), cpuUsPerRound: s.cpuUs / s.samples.length, hooksPerTurn: s.hooksPerTurn }));
}
