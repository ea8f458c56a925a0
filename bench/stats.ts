/** Summary of a sample of per-round times, in microseconds. */
export interface Summary {
  readonly n: number;
  readonly median: number;
  readonly p90: number;
  readonly mean: number;
  readonly min: number;
}

export function quantile(sorted: readonly number[], q: number): number {
  if (sorted.length === 0) return NaN;
  const at = (sorted.length - 1) * q;
  const lo = Math.floor(at);
  const hi = Math.ceil(at);
  return sorted[lo]! + (sorted[hi]! - sorted[lo]!) * (at - lo);
}

export function summarize(samples: readonly number[]): Summary {
  const sorted = [...samples].sort((a, b) => a - b);
  const mean = sorted.reduce((s, x) => s + x, 0) / sorted.length;
  return { n: sorted.length, median: quantile(sorted, 0.5), p90: quantile(sorted, 0.9), mean, min: sorted[0] ?? NaN };
}

export function round(value: number, digits = 2): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}

/** A series measured in blocks: how far the blocks' medians drift, and the spread inside a block. */
export interface BlockSpread {
  readonly blockMedians: readonly number[];
  /** Every sample divided by its block's median: its p90 and mean are p90 / median and mean / median within blocks. */
  readonly withinBlock: Summary;
}

/**
 * Separates drift from tail: `blockStarts` are the indices (ascending, the first 0) where
 * each block of `samples` begins. A machine whose speed changes between blocks widens the
 * pooled p90 / median without any turn being slow for its block.
 */
export function blockSpread(samples: readonly number[], blockStarts: readonly number[]): BlockSpread {
  const blockMedians: number[] = [];
  const normalized: number[] = [];
  blockStarts.forEach((start, k) => {
    const block = samples.slice(start, blockStarts[k + 1] ?? samples.length);
    const median = summarize(block).median;
    blockMedians.push(median);
    for (const x of block) normalized.push(x / median);
  });
  return { blockMedians, withinBlock: summarize(normalized) };
}
