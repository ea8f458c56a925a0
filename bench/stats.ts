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
