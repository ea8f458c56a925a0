/**
 * `npm run bench:import`: how long `import('trellis')` takes in a fresh process and what it
 * loads. Runs the compiled root entry (dist/index.js, or `--entry <file>`) N times
 * (`--runs N`, default 9), printing the wall-clock and CPU time of the `import()`, then the npm packages one recorded import resolved, with the
 * optional heavy ones it must not load marked.
 */
import { fileURLToPath, pathToFileURL } from 'node:url';
import { HEAVY_PACKAGES, packagesIn, profileImport } from './import-profile.js';
import { round, summarize } from './stats.js';

const args = process.argv.slice(2);
const runsArg = args.indexOf('--runs');
const RUNS = runsArg >= 0 ? Number(args[runsArg + 1]) : 9;
const entryArg = args.indexOf('--entry');
const ENTRY = entryArg >= 0 ? pathToFileURL(args[entryArg + 1]!).href : new URL('../index.js', import.meta.url).href;

const runs = Array.from({ length: RUNS }, () => profileImport(ENTRY, false));
const wall = summarize(runs.map((run) => run.ms));
const cpu = summarize(runs.map((run) => run.cpuMs));
const recorded = profileImport(ENTRY, true);
const packages = packagesIn(recorded.urls);
const heavy = packages.filter((name) => HEAVY_PACKAGES.some((p) => p.test(name)));
const ownModules = recorded.urls.filter((url) => url.startsWith('file:') && !url.includes('/node_modules/')).length;

console.log(`import('${fileURLToPath(ENTRY)}') in a fresh node ${process.version} process, ${RUNS} runs`);
console.log(`  wall: median ${round(wall.median, 1)} ms   min ${round(wall.min, 1)} ms   p90 ${round(wall.p90, 1)} ms`);
console.log(`  cpu:  median ${round(cpu.median, 1)} ms   min ${round(cpu.min, 1)} ms   p90 ${round(cpu.p90, 1)} ms`);
console.log(`  modules resolved: ${recorded.urls.length} (${ownModules} of trellis), packages: ${packages.length}`);
console.log(`  packages: ${packages.join(', ')}`);
console.log(
  heavy.length ? `  heavy optional packages loaded: ${heavy.join(', ')}` : '  heavy optional packages loaded: none',
);
