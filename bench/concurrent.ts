/**
 * Figure 3, run in its own process (forked by run.ts) so peak RSS and heap belong to it
 * alone: 1,000 turns started at once, each in its own session of one app, and the same
 * 1,000 turns of the hand-written loop as the baseline.
 *  - wall: from the first send() to the last reply; the median of 5 bursts after warm-up;
 *  - live heap per in-flight turn: the turns are held inside their last tool call (after
 *    20 rounds of state), a full GC is forced, and the heap growth over the idle process
 *    is divided by the number held.
 */
import { checkResult, createBenchApp, type BenchApp } from './bench-app.js';
import { handTurn } from './hand-loop.js';
import { assertWork, auditLog, hold, resetCounters } from './workload.js';

export interface HeldFigures {
  readonly liveHeapPerTurnKb: number;
  readonly heapBeforeMb: number;
  readonly heapHeldMb: number;
  readonly rssHeldMb: number;
}

export interface ConcurrentFigures {
  readonly turns: number;
  readonly bursts: readonly number[];
  /** Median of the bursts. */
  readonly wallMs: number;
  readonly handBursts: readonly number[];
  readonly handWallMs: number;
  readonly rssBeforeMb: number;
  readonly peakRssMb: number;
  readonly held: HeldFigures;
  readonly handHeld: HeldFigures;
}

const BURSTS = 5;
const gc = (globalThis as { gc?: () => void }).gc;
const mb = (bytes: number) => bytes / 1024 / 1024;
const median = (xs: readonly number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)]!;

function fullGc(): void {
  if (!gc) throw new Error('figure 3 needs node --expose-gc');
  gc();
  gc();
}

/** Starts `turns` turns at once; wall time until the last one ends. Checks the work. */
async function burst(turns: number, start: (i: number) => Promise<void>, label: string): Promise<number> {
  resetCounters();
  const started = performance.now();
  await Promise.all(Array.from({ length: turns }, (_, i) => start(i)));
  const wall = performance.now() - started;
  assertWork(turns, label);
  return wall;
}

/** Holds `turns` turns inside their last tool call and measures the live heap they add. */
async function held(
  turns: number,
  start: (i: number) => Promise<void>,
  forget: () => void,
  label: string,
): Promise<HeldFigures> {
  forget();
  fullGc();
  const heapBefore = process.memoryUsage().heapUsed;
  resetCounters();
  hold.arm();
  const running = Promise.all(Array.from({ length: turns }, (_, i) => start(i)));
  while (hold.waiting < turns) await new Promise((resolve) => setTimeout(resolve, 1));
  // What the workload itself keeps (the scripted model's record of requests, the audit log) is not the framework's.
  forget();
  fullGc();
  const memory = process.memoryUsage();
  hold.disarm();
  await running;
  assertWork(turns, label);
  return {
    liveHeapPerTurnKb: (memory.heapUsed - heapBefore) / 1024 / turns,
    heapBeforeMb: mb(heapBefore),
    heapHeldMb: mb(memory.heapUsed),
    rssHeldMb: mb(memory.rss),
  };
}

export async function concurrentFigures(turns: number): Promise<ConcurrentFigures> {
  const bench: BenchApp = await createBenchApp();
  let n = 0;
  const trellis = async (i: number) => checkResult(await bench.turn(`c${n}-${i}`), 'figure 3');
  const hand = async () => {
    await handTurn('Run the script.');
  };
  const forget = () => {
    bench.model.calls.length = 0;
    auditLog.length = 0;
  };
  for (n = 0; n < 3; n++) await burst(100, trellis, 'figure 3 warm-up');
  for (let i = 0; i < 3; i++) await burst(100, hand, 'figure 3 warm-up (hand)');
  fullGc();
  const rssBefore = process.memoryUsage().rss;
  const bursts: number[] = [];
  const handBursts: number[] = [];
  for (let k = 0; k < BURSTS; k++) {
    n++;
    bursts.push(await burst(turns, trellis, 'figure 3 (wall)'));
    handBursts.push(await burst(turns, hand, 'figure 3 (wall, hand)'));
  }
  n++;
  const heldTrellis = await held(turns, trellis, forget, 'figure 3 (held)');
  const heldHand = await held(turns, hand, forget, 'figure 3 (held, hand)');
  return {
    turns,
    bursts,
    wallMs: median(bursts),
    handBursts,
    handWallMs: median(handBursts),
    rssBeforeMb: mb(rssBefore),
    peakRssMb: process.resourceUsage().maxRSS / 1024,
    held: heldTrellis,
    handHeld: heldHand,
  };
}

// Forked by run.ts: answer over IPC.
if (process.send && process.argv[2] === '--child') {
  const figures = await concurrentFigures(Number(process.argv[3] ?? 1000));
  process.send(figures, () => process.exit(0));
}
