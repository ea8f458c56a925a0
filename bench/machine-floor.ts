import { performance } from 'node:perf_hooks';
import { watchGcPauses } from './gc-pauses.js';
import { blockSpread, summarize, type BlockSpread, type Summary } from './stats.js';

/** A piece this much longer than the median counts as slow (the VM's interruptions add ~30–50 µs). */
export const SLOW_PIECE = 1.6;

/** The slow pieces of a series timed in equal pieces of work, in time order. */
export interface SlowPieces {
  /** Share of the pieces at ≥ `SLOW_PIECE` × the median. */
  readonly share: number;
  /** Median number of pieces from one slow piece to the next (NaN with fewer than two). */
  readonly medianGap: number;
  /** Median time from the start of one slow piece to the start of the next (sum of the pieces; same unit as the samples). */
  readonly medianInterval: number;
  /** Median of what a slow piece took over the median piece (same unit as the samples). */
  readonly medianExtra: number;
  /** The first pieces as characters: `.` a normal piece, `S` a slow one. */
  readonly strip: string;
}

export function slowPieces(samples: readonly number[], stripLength = 120): SlowPieces {
  const median = summarize(samples).median;
  const slow: number[] = [];
  samples.forEach((x, i) => {
    if (x >= SLOW_PIECE * median) slow.push(i);
  });
  const gaps = slow.slice(1).map((at, k) => at - slow[k]!);
  const elapsed = [0];
  for (const x of samples) elapsed.push(elapsed[elapsed.length - 1]! + x);
  const intervals = slow.slice(1).map((at, k) => elapsed[at]! - elapsed[slow[k]!]!);
  return {
    share: samples.length > 0 ? slow.length / samples.length : 0,
    medianGap: gaps.length > 0 ? summarize(gaps).median : NaN,
    medianInterval: intervals.length > 0 ? summarize(intervals).median : NaN,
    medianExtra: slow.length > 0 ? summarize(slow.map((i) => samples[i]! - median)).median : NaN,
    strip: samples
      .slice(0, stripLength)
      .map((x) => (x >= SLOW_PIECE * median ? 'S' : '.'))
      .join(''),
  };
}

/** What the machine alone does to a piece of synchronous work as long as a turn. */
export interface FloorFigures extends Summary {
  /** The piece length asked for (µs) and the loop iterations calibrated to it. */
  readonly targetUs: number;
  readonly iterations: number;
  /** GC pauses seen while the pieces were timed (the loop allocates nothing: 0 expected). */
  readonly gcPauses: number;
  readonly slow: SlowPieces;
  /** The pieces in blocks of {@link FLOOR_BLOCK}, for comparison with figure 1's blocks. */
  readonly spread: BlockSpread;
}

/** Pieces per block of the floor's {@link BlockSpread}: about as long as a block of 100 Trellis turns. */
export const FLOOR_BLOCK = 100;

let sink = 0;

/** Allocation-free integer work; `sink` keeps it from being optimized away. */
function work(iterations: number): void {
  let acc = sink;
  for (let i = 0; i < iterations; i++) acc = (acc + i * 31) | 0;
  sink = acc;
}

/** µs per piece, read with `performance.now()` into a typed array: nothing allocated while timing. */
function timePieces(iterations: number, pieces: number): Float64Array {
  const us = new Float64Array(pieces);
  for (let p = 0; p < pieces; p++) {
    const started = performance.now();
    work(iterations);
    us[p] = (performance.now() - started) * 1000;
  }
  return us;
}

/**
 * A plain synchronous loop timed in `pieces` pieces of `targetUs` each (µs; the iterations are
 * calibrated on medians first). It allocates nothing, so no GC lands in it: its p90 / median
 * and mean / median are the VM's own, the floor under any series whose samples are that long.
 */
export async function machineFloor(targetUs: number, pieces: number): Promise<FloorFigures> {
  let iterations = 1000;
  for (let pass = 0; pass < 6; pass++) {
    const median = summarize([...timePieces(iterations, 200)]).median;
    const next = Math.max(1, Math.round((iterations * targetUs) / median));
    const settled = Math.abs(next - iterations) <= iterations * 0.03;
    iterations = next;
    if (settled) break;
  }
  const gcWatch = watchGcPauses();
  const from = performance.now();
  const timed = timePieces(iterations, pieces);
  const to = performance.now();
  const gcPauses = (await gcWatch.stop()).filter((p) => p.start < to && p.start + p.duration > from).length;
  const samples = [...timed];
  const blockStarts = Array.from({ length: Math.ceil(pieces / FLOOR_BLOCK) }, (_, k) => k * FLOOR_BLOCK);
  return {
    ...summarize(samples),
    targetUs,
    iterations,
    gcPauses,
    slow: slowPieces(samples),
    spread: blockSpread(samples, blockStarts),
  };
}
