/**
 * What a turn held in its last tool call keeps alive, by kind: a heap snapshot before and
 * while `N` turns are held (the held-turn setup of figure 3), compared node type by node
 * type. `node --expose-gc dist/bench/held-heap.js [turns] [hand] [shapes]`: with `hand`, the
 * hand-written loop's turns are held instead, for the same table of the baseline; with
 * `shapes`, plain objects are told apart by their property names and arrays, strings and
 * closures by what holds them (docs/performance.md, "Results": the live heap).
 */
import { readFileSync, unlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { writeHeapSnapshot } from 'node:v8';
import { checkResult, createBenchApp } from './bench-app.js';
import { handTurn } from './hand-loop.js';
import { auditLog, hold } from './workload.js';

interface Snapshot {
  snapshot: { meta: { node_fields: string[]; node_types: [string[]]; edge_fields: string[]; edge_types: [string[]] } };
  nodes: number[];
  edges: number[];
  strings: string[];
}

const gc = (globalThis as { gc?: () => void }).gc;
if (!gc) throw new Error('run with node --expose-gc');
const turns = Number(process.argv[2] ?? 500);
const hand = process.argv.includes('hand');
/** `shapes`: plain objects by their property names, contexts by their variables, arrays by who holds them. */
const shapes = process.argv.includes('shapes');

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
  const shapeOf = shapes ? shapeKeys(snap) : undefined;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i]!]!;
    const name = snap.strings[snap.nodes[i + 1]!]!;
    const key = shapeOf?.get(i) ?? (type === 'object' || type === 'closure' ? `${type}:${name}` : type);
    const entry = kinds.get(key) ?? [0, 0];
    entry[0] += snap.nodes[i + 3]!;
    entry[1]++;
    kinds.set(key, entry);
  }
  return kinds;
}

/**
 * Finer keys for the kinds that hide what they are: a plain object by its property names, a
 * function context by its variables, an array or a closure by the property that holds it.
 */
function shapeKeys(snap: Snapshot): Map<number, string> {
  const width = snap.snapshot.meta.node_fields.length;
  const edgeWidth = snap.snapshot.meta.edge_fields.length;
  const types = snap.snapshot.meta.node_types[0];
  const edgeTypes = snap.snapshot.meta.edge_types[0];
  const keys = new Map<number, string>();
  const holder = new Map<number, string>();
  const own = new Map<number, string[]>();
  let edge = 0;
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i]!]!;
    const name = snap.strings[snap.nodes[i + 1]!]!;
    const names: string[] = [];
    for (let e = 0; e < snap.nodes[i + 4]!; e++, edge += edgeWidth) {
      const edgeType = edgeTypes[snap.edges[edge]!]!;
      const to = snap.edges[edge + 2]!;
      const edgeName =
        edgeType === 'element' || edgeType === 'hidden'
          ? `[${snap.edges[edge + 1]}]`
          : snap.strings[snap.edges[edge + 1]!]!;
      if (edgeType === 'property' || edgeType === 'context') names.push(edgeName);
      if ((edgeType === 'property' || edgeType === 'internal' || edgeType === 'context') && !holder.has(to))
        holder.set(to, `${name}.${edgeName}`);
    }
    if ((type === 'object' && (name === 'Object' || name === 'system / Context')) || type === 'closure')
      own.set(i, names);
  }
  for (let i = 0; i < snap.nodes.length; i += width) {
    const type = types[snap.nodes[i]!]!;
    const name = snap.strings[snap.nodes[i + 1]!]!;
    if (type === 'closure') keys.set(i, `closure:${name} in ${holder.get(i) ?? '?'}`);
    else if (own.has(i))
      keys.set(
        i,
        `${name}{${own
          .get(i)!
          .filter((n) => n !== '__proto__' && n !== 'map')
          .join(',')}}`,
      );
    else if (
      type === 'array' ||
      type === 'hidden' ||
      type === 'object shape' ||
      (type === 'object' && name === 'Array') ||
      type === 'string' ||
      type === 'concatenated string' ||
      type === 'number'
    )
      keys.set(i, `${type === 'object' ? 'Array' : type} in ${holder.get(i) ?? '?'}`);
  }
  return keys;
}

const bench = await createBenchApp();
for (let i = 0; i < 200; i++) {
  if (hand) await handTurn('Run the script.');
  else checkResult(await bench.turn(`warm${i}`), 'held-heap warm-up');
}
// Kept out of the heap while the turns are held: with `shapes` the keys are many strings.
const beforeFile = join(tmpdir(), `trellis-held-before-${process.pid}.json`);
writeFileSync(beforeFile, JSON.stringify([...liveByKind()]));
hold.arm();
const running = Promise.all(
  Array.from({ length: turns }, (_, i) => (hand ? handTurn('Run the script.') : bench.turn(`held${i}`))),
);
while (hold.waiting < turns) await new Promise((resolve) => setTimeout(resolve, 1));
// The workload's own leftovers are not the framework's.
bench.model.calls.length = 0;
auditLog.length = 0;
const during = liveByKind();
const before = new Map<string, [number, number]>(
  JSON.parse(readFileSync(beforeFile, 'utf8')) as [string, [number, number]][],
);
unlinkSync(beforeFile);
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
for (const [kind, bytes, count] of rows.slice(0, shapes ? 120 : 40))
  console.log(`${bytes.toFixed(0).padStart(10)}  ${count.toFixed(1).padStart(10)}  ${kind}`);
