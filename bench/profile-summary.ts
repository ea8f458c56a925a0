/** Prints the top self-time functions of a `.cpuprofile` (from `node --cpu-prof`). */
import { readFileSync } from 'node:fs';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
  hitCount: number;
  children?: number[];
}
interface Profile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
}

const [file, topArg] = process.argv.slice(2);
if (!file) throw new Error('usage: profile-summary <file.cpuprofile> [top]');
const profile = JSON.parse(readFileSync(file, 'utf8')) as Profile;
const top = Number(topArg ?? 30);
const byId = new Map(profile.nodes.map((n) => [n.id, n]));
const self = new Map<number, number>();
profile.samples.forEach((id, i) => self.set(id, (self.get(id) ?? 0) + (profile.timeDeltas[i] ?? 0)));
const total = [...self.values()].reduce((a, b) => a + b, 0);
const where = (n: ProfileNode) => {
  const url = n.callFrame.url.replace(/^file:\/\/.*?\/(dist|node_modules)\//, '$1/');
  return `${n.callFrame.functionName || '(anonymous)'} ${url}:${n.callFrame.lineNumber + 1}`;
};
const selfBy = new Map<string, number>();
for (const [id, t] of self) {
  const key = where(byId.get(id)!);
  selfBy.set(key, (selfBy.get(key) ?? 0) + t);
}
// Inclusive time per function (counted once per sample even under recursion).
const parent = new Map<number, number>();
for (const n of profile.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
const incl = new Map<string, number>();
profile.samples.forEach((id, i) => {
  const seen = new Set<string>();
  for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
    const key = where(byId.get(at)!);
    if (seen.has(key)) continue;
    seen.add(key);
    incl.set(key, (incl.get(key) ?? 0) + (profile.timeDeltas[i] ?? 0));
  }
});
const pct = (t: number) => ((100 * t) / total).toFixed(1).padStart(5);
console.log(`total ${(total / 1000).toFixed(0)} ms\n\nself time:`);
for (const [k, t] of [...selfBy].sort((a, b) => b[1] - a[1]).slice(0, top)) console.log(`${pct(t)}%  ${k}`);
console.log('\ninclusive time:');
for (const [k, t] of [...incl].sort((a, b) => b[1] - a[1]).slice(0, top * 2)) console.log(`${pct(t)}%  ${k}`);
