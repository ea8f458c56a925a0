/**
 * What a turn held in its last tool call keeps alive, by kind: a heap snapshot before and
 * while `N` turns are held (the held-turn setup of figure 3), compared node type by node
 * type. `node --expose-gc dist/bench/held-heap.js [turns] [hand]`: with `hand`, the
 * hand-written loop's turns are held instead, for the same table of the baseline.
 */
import { readFileSync, unlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { checkResult, createBenchApp } from './bench-app.js';
import { handTurn } from './hand-loop.js';
import { auditLog, hold } from './workload.js';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]] } };
  nodes: number[];
  strings: string[];
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const turns = Number(process.argv[2] ?? 500);
const hand = process.argv[3] === 'hand';

/** Self size and count of live heap nodes by kind (`object:<constructor>`, `closure:<name>`, or the node type). */
function liveByKind(): Map<string, [number, number]> {
  gc!();
  gc!();
  const file = writeHeapSnapshot(join(tmpdir(), `trellis-held-${process.pid}-${Date.now()}.heapsnapshot`));
  const snap = JSON.parse(readFileSync(file, 'utf8')) as Snapshot;
  unlinkSync(file);
  const width = snap.snapshot.meta.node_fields.length;
  const types = snap.snapshot.meta.node_types[0];
  const kinds = new Map<string, [number, number]>();
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i]!]!;
    const name = snap.strings[snap.nodes[i + 1]!]!;
    const key = type === 'object' || type === 'closure' ? `${type}:${name}` : type;
    const entry = kinds.get(key) ?? [0, 0];
    entry[0] += snap.nodes[i + 3]!;
    entry[1]++;
    kinds.set(key, entry);
  }
  return kinds;
}

const bench = await createBenchApp();
for (let i = 0; i < 200; i++) {
  if (hand) await handTurn('Run the script.');
  else checkResult(await bench.turn(`warm${i}`), 'held-heap warm-up');
}
const before = liveByKind();
hold.arm();
const running = Promise.all(Array.from({ length: turns }, (_, i) => (hand ? handTurn('Run the script.') : bench.turn(`held${i}`))));
while (hold.waiting < turns) await new Promise((resolve) => setTimeout(resolve, 1));
// The workload's own leftovers are not the framework's.
bench.model.calls.length = 0;
auditLog.length = 0;
const during = liveByKind();
hold.disarm();
for (const result of await running) if (typeof result !== 'number') checkResult(result, 'held-heap');

let total = 0;
const rows: [string, number, number][] = [];
for (const [kind, [size, count]] of during) {
  const [size0, count0] = before.get(kind) ?? [0, 0];
  total += size - size0;
  if (Math.abs(size - size0) > turns * 20) rows.push([kind, (size - size0) / turns, (count - count0) / turns]);
}
rows.sort((a, b) => b[1] - a[1]);
console.log(`${turns} ${hand ? 'hand-loop ' : ''}turns held: ${(total / turns).toFixed(0)} B live per turn`);
console.log('bytes/turn  count/turn  kind');
for (const [kind, bytes, count] of rows.slice(0, 40)) console.log(`${bytes.toFixed(0).padStart(10)}  ${count.toFixed(1).padStart(10)}  ${kind}`);
