/**
 * Bytes allocated per turn, exactly: V8 allocates young objects by bumping a pointer, so
 * between two readings with no GC in between, the growth of `heapUsed` is what was
 * allocated. A GC shrinks the heap by far more than a turn allocates, so a turn whose
 * heap did not shrink had none; the median over those turns is reported.
 */
export interface AllocationFigures {
  readonly turns: number;
  /** Turns with no GC during them, whose growth was counted. */
  readonly counted: number;
  readonly bytesPerTurn: number;
  readonly bytesPerRound: number;
}

export async function allocationPerTurn(
  turn: (index: number) => Promise<number>,
  turns: number,
  warmup: number,
): Promise<AllocationFigures> {
  for (let i = 0; i < warmup; i++) await turn(i);
  // What reading the heap itself allocates, measured around an empty await.
  const overhead = median(await growths(async () => 0, 200));
  const counted: number[] = [];
  let rounds = 0;
  for (let i = 0; i < turns; i++) {
    const before = process.memoryUsage().heapUsed;
    rounds = await turn(warmup + i);
    const grown = process.memoryUsage().heapUsed - before;
    if (grown > 0) counted.push(grown - overhead);
  }
  const bytesPerTurn = median(counted);
  return { turns, counted: counted.length, bytesPerTurn, bytesPerRound: bytesPerTurn / rounds };
}

async function growths(work: () => Promise<number>, n: number): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) {
    const before = process.memoryUsage().heapUsed;
    await work();
    const grown = process.memoryUsage().heapUsed - before;
    if (grown > 0) out.push(grown);
  }
  return out;
}

function median(xs: readonly number[]): number {
  if (xs.length === 0) return NaN;
  const sorted = [...xs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}
