/**
 * Where the workload's allocations come from: samples every allocation (including the
 * ones collected soon after) over sequential turns, and prints the top allocating
 * functions. `node dist/bench/alloc-profile.js [turns] [--hand]` (`--hand`: the hand-written loop).
 */
import { Session } from 'node:inspector/promises';
import { checkResult, createBenchApp } from './bench-app.js';
import { handTurn } from './hand-loop.js';
import { ROUNDS_PER_TURN } from './workload.js';

interface SampleNode {
  callFrame: { functionName: string; url: string; lineNumber: number };
  selfSize: number;
  id: number;
  children: SampleNode[];
}

const turns = Number(process.argv[2] ?? 500);
const bench = await createBenchApp();
const hand = process.argv.includes('--hand');
const turn = async (id: string): Promise<void> => {
  if (hand) await handTurn('Run the script.');
  else checkResult(await bench.turn(id), 'alloc');
};
for (let i = 0; i < 100; i++) await turn(`warm${i}`);
const session = new Session();
session.connect();
await session.post('HeapProfiler.enable');
const interval = 1024;
await session.post('HeapProfiler.startSampling', {
  samplingInterval: interval,
  includeObjectsCollectedByMajorGC: true,
  includeObjectsCollectedByMinorGC: true,
} as never);
for (let i = 0; i < turns; i++) await turn(`a${i}`);
const { profile } = (await session.post('HeapProfiler.stopSampling')) as unknown as {
  profile: { head: SampleNode; samples: { size: number; nodeId: number }[] };
};
const byFn = new Map<string, number>();
const walk = (node: SampleNode) => {
  const url = node.callFrame.url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/');
  const key = `${node.callFrame.functionName || '(anonymous)'} ${url}:${node.callFrame.lineNumber + 1}`;
  byFn.set(key, (byFn.get(key) ?? 0) + node.selfSize);
  node.children.forEach(walk);
};
walk(profile.head);
const total = [...byFn.values()].reduce((a, b) => a + b, 0);
console.log(
  `~${(total / turns / 1024).toFixed(1)} KB allocated per turn, ~${(total / turns / ROUNDS_PER_TURN / 1024).toFixed(2)} KB per round (sampled)`,
);
for (const [k, v] of [...byFn].sort((a, b) => b[1] - a[1]).slice(0, 30))
  console.log(
    `${((100 * v) / total).toFixed(1).padStart(5)}%  ${(v / turns / 1024).toFixed(2).padStart(6)} KB/turn  ${k}`,
  );
