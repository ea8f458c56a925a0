/**
 * A profiling entry: many sequential turns of the workload (optionally with extra hook
 * plugins), nothing else. Run `node --cpu-prof --cpu-prof-dir=bench/results dist/bench/profile.js [turns] [extraPlugins]`,
 * then `node dist/bench/profile-summary.js bench/results/<file>.cpuprofile`.
 */
import { checkResult, createBenchApp } from './bench-app.js';
import { hookPlugins } from './hook-plugins.js';
import { assertWork, resetCounters } from './workload.js';

const turns = Number(process.argv[2] ?? 2000);
const extra = Number(process.argv[3] ?? 0);
const bench = await createBenchApp({ extra: hookPlugins(extra, 'profile-') });
resetCounters();
const started = performance.now();
for (let i = 0; i < turns; i++) checkResult(await bench.turn(`p${i}`), 'profile');
const ms = performance.now() - started;
assertWork(turns, 'profile');
console.log(`${turns} turns, ${extra} extra plugins: ${((ms * 1000) / turns / 21).toFixed(1)} µs per round`);
