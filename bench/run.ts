/**
 * `npm run bench`: the figures of issue 6 for the workload in workload.ts. Prints a table
 * and writes bench/results/<timestamp>.json. Options: `--quick` (fewer turns, for a smoke
 * run), `--turns N` (timed turns per sequential series, default 600).
 */
import { execFileSync, fork } from 'node:child_process';
import { mkdirSync, writeFileSync } from 'node:fs';
import { cpus, loadavg } from 'node:os';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { checkResult, createBenchApp } from './bench-app.js';
import { allocationPerTurn } from './allocation.js';
import { checkpointFigures, longSessionFigures } from './checkpoint.js';
import type { ConcurrentFigures } from './concurrent.js';
import { handTurn } from './hand-loop.js';
import { hookPlugins } from './hook-plugins.js';
import { installFigures } from './install.js';
import { machineFloor } from './machine-floor.js';
import { printReport, type BenchReport } from './report.js';
import { roundTimes } from './round-times.js';
import { alternate, series } from './series.js';
import { ROUNDS_PER_TURN } from './workload.js';

const args = process.argv.slice(2);
const quick = args.includes('--quick');
const turnsArg = args.indexOf('--turns');
const TURNS = turnsArg >= 0 ? Number(args[turnsArg + 1]) : quick ? 200 : 600;
const BLOCKS = 6;
/** Turns every sequential series runs before its first timed block. */
const WARM_UP_TURNS = 600;
const CONCURRENT = 1000;
const here = dirname(fileURLToPath(import.meta.url));

function trellisTurn(bench: Awaited<ReturnType<typeof createBenchApp>>, prefix: string) {
  return async (i: number): Promise<number> => {
    const result = await bench.turn(`${prefix}${i}`);
    checkResult(result, prefix);
    return result.rounds;
  };
}

function runChild(turns: number): Promise<ConcurrentFigures> {
  return new Promise((resolve, reject) => {
    const child = fork(join(here, 'concurrent.js'), ['--child', String(turns)], { execArgv: ['--expose-gc'] });
    child.once('message', (m) => resolve(m as ConcurrentFigures));
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`figure 3 child exited with ${code}`));
    });
  });
}

/** Which code was measured: the commit and how many files differed from it. */
function sourceVersion(): { commit: string; changedFiles: number } {
  try {
    const commit = execFileSync('git', ['rev-parse', '--short', 'HEAD'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    }).trim();
    const changed = execFileSync('git', ['status', '--porcelain', '--', 'src', 'plugins', 'decorators', 'index.ts'], {
      encoding: 'utf8',
      stdio: ['ignore', 'pipe', 'ignore'],
    });
    return { commit, changedFiles: changed.split('\n').filter(Boolean).length };
  } catch {
    return { commit: 'unknown', changedFiles: -1 };
  }
}

const startedAt = new Date();
const t0 = performance.now();
const log = (what: string) => console.error(`[bench ${((performance.now() - t0) / 1000).toFixed(1)}s] ${what}`);

// Figures 1 and 2: sequential turns, alternating blocks of every configuration.
log('building apps');
const apps = {
  base: await createBenchApp(),
  extra1: await createBenchApp({ extra: hookPlugins(1, 'every1-') }),
  extra10: await createBenchApp({ extra: hookPlugins(10, 'every10-') }),
  extra50: await createBenchApp({ extra: hookPlugins(50, 'every50-') }),
  idle50: await createBenchApp({ extra: hookPlugins(50, 'idle50-', ['app.startup', 'app.shutdown', 'app.heartbeat']) }),
};
const hand = series('hand-written loop', () => handTurn('Run the script.'));
const base = series('trellis', trellisTurn(apps.base, 'base-'));
const scaling = [
  series('trellis + 1 plugin, hook on every point', trellisTurn(apps.extra1, 'e1-')),
  series('trellis + 10 plugins, hook on every point', trellisTurn(apps.extra10, 'e10-')),
  series('trellis + 50 plugins, hook on every point', trellisTurn(apps.extra50, 'e50-')),
  series('trellis + 50 plugins, hooks only on points a turn never runs', trellisTurn(apps.idle50, 'i50-')),
];
log(`figures 1-2: ${BLOCKS} alternating blocks, ${TURNS} timed turns per series`);
const perBlock = Math.ceil(TURNS / BLOCKS);
const measured = await alternate(
  [hand, base, ...scaling],
  BLOCKS,
  (s) => (s === hand ? perBlock * 4 : perBlock),
  // Every series warms up to the same number of turns first (the hand loop had 400, Trellis 60:
  // its first block then timed code still being compiled), then a few turns per block.
  (s, block) => (block === 0 ? WARM_UP_TURNS : s === hand ? 40 : 5),
);
const [handFig, baseFig, ...scalingFigs] = measured;

log('figure 1, where the tail comes from: the machine floor, rounds timed one by one');
const FLOOR_PIECES = quick ? 1000 : 3000;
const floor = {
  trellisTurn: await machineFloor(baseFig!.median * ROUNDS_PER_TURN, FLOOR_PIECES),
  handTurn: await machineFloor(handFig!.median * ROUNDS_PER_TURN, FLOOR_PIECES),
};
const roundTurns = quick ? 40 : 100;
const [handRounds, baseRounds] = await roundTimes(
  [
    { label: hand.label, turn: () => handTurn('Run the script.') },
    { label: base.label, turn: trellisTurn(apps.base, 'round-') },
  ],
  3,
  (s) => (s.label === hand.label ? roundTurns * 4 : roundTurns),
  20,
);

log('figure 1: bytes allocated per turn (hand loop, trellis)');
const allocation = {
  hand: await allocationPerTurn(() => handTurn('Run the script.'), quick ? 200 : 600, 100),
  trellis: await allocationPerTurn(trellisTurn(apps.base, 'alloc-'), quick ? 100 : 300, 30),
};

log(`figure 3: ${CONCURRENT} concurrent turns (child process)`);
const concurrent = await runChild(CONCURRENT);

log('figure 4: install 100 and 1,000 plugins; SqliteStore checkpoint, of a new session and along a 200-turn one');
const install = await installFigures(100);
const install1000 = await installFigures(1000, 1);
const checkpoint = await checkpointFigures(quick ? 100 : 200, 40);
const longSession = await longSessionFigures(200);

const report: BenchReport = {
  startedAt: startedAt.toISOString(),
  durationS: (performance.now() - t0) / 1000,
  source: sourceVersion(),
  machine: { node: process.version, cpus: cpus().length, cpu: cpus()[0]?.model ?? '', loadavg: loadavg() },
  workload: { roundsPerTurn: ROUNDS_PER_TURN, toolCallsPerTurn: 20, middlewarePerTurn: 60, transformsPerTurn: 21 },
  sequential: { hand: handFig!, trellis: baseFig! },
  floor,
  rounds: { hand: handRounds!, trellis: baseRounds! },
  allocation,
  scaling: scalingFigs,
  concurrent,
  install,
  install1000,
  checkpoint,
  longSession,
};
const file = join(here, '..', '..', 'bench', 'results', `${startedAt.toISOString().replace(/[:.]/g, '-')}.json`);
mkdirSync(dirname(file), { recursive: true });
writeFileSync(file, `${JSON.stringify(report, null, 2)}\n`);
printReport(report);
console.log(`\nJSON: ${file}`);
