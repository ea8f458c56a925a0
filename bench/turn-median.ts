/**
 * One process's figure for alternating A/B runs of two builds: `warmup` turns, then `turns`
 * timed ones; prints the median, p90 and mean µs per round as JSON. Run it in each build's
 * folder in turn (`node dist/bench/turn-median.js [turns] [warmup]`), several times each:
 * a process now and then runs in the machine's slow mode, which a median over processes
 * leaves out.
 */
import { checkResult, createBenchApp } from './bench-app.js';
import { ROUNDS_PER_TURN } from './workload.js';

const turns = Number(process.argv[2] ?? 2000);
const warmup = Number(process.argv[3] ?? 600);
const bench = await createBenchApp();
for (let i = 0; i < warmup; i++) checkResult(await bench.turn(`w${i}`), 'turn-median warm-up');
const times: number[] = [];
for (let i = 0; i < turns; i++) {
  const started = performance.now();
  const result = await bench.turn(`t${i}`);
  times.push(((performance.now() - started) * 1000) / ROUNDS_PER_TURN);
  checkResult(result, 'turn-median');
}
times.sort((a, b) => a - b);
const mean = times.reduce((sum, t) => sum + t, 0) / times.length;
console.log(JSON.stringify({ median: times[times.length >> 1], p90: times[Math.floor(times.length * 0.9)], mean }));
