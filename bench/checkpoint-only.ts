/**
 * Figure 4's checkpoint figures alone, for comparing stores or builds quickly:
 * `node dist/bench/checkpoint-only.js [turns] [long-session turns]`.
 *
 * `node dist/bench/checkpoint-only.js --against <dist of another build> [checkpoints]` writes
 * figure 4's checkpoint straight to a SqliteStore of this build and of the other one, each
 * to new sessions of its own fresh file, alternating in one process so that both see the same
 * machine, and counts the WAL frames (pages) a checkpoint writes. For A/B of store changes on
 * a shared, noisy machine.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import type BetterSqlite3 from 'better-sqlite3';
import { SqliteStore } from '../index.js';
import type { SessionCheckpoint } from '../stores.js';
import { benchTurnCheckpoint, checkpointFigures, longSessionFigures } from './checkpoint.js';
import { summarize } from './stats.js';

const f = (n: number) => n.toFixed(1);

if (process.argv[2] === '--against') {
  await against(process.argv[3] ?? '', Number(process.argv[4] ?? 3000));
} else {
  const turns = Number(process.argv[2] ?? 800);
  const longTurns = Number(process.argv[3] ?? 200);
  const cp = await checkpointFigures(turns, 100);
  const long = await longSessionFigures(longTurns);
  console.log(
    `checkpoint median ${f(cp.checkpointUs)} µs (p90 ${f(cp.checkpointP90Us)}), store cost per turn ${f(cp.storeCostUsPerTurn)} µs over a ${f(cp.turnUsWithout)} µs turn; ` +
      `straight to the store: a new file's first 150 ${f(cp.newFileCheckpointUs)} µs, checkpoints 200-300 ${f(cp.primedStoreOnlyUs)} µs; ` +
      `${long.turns}-turn session: first tenth ${f(long.firstTenthUs)} µs, last tenth ${f(long.lastTenthUs)} µs (transcript ${long.transcriptAtLastTenth}); straight to the store ${f(long.storeOnlyFirstTenthUs)} / ${f(long.storeOnlyLastTenthUs)} µs`,
  );
}
process.exit(0);

async function against(otherDist: string, checkpoints: number): Promise<void> {
  if (!otherDist) throw new Error('usage: checkpoint-only --against <dist folder of another build> [checkpoints]');
  const other = (await import(pathToFileURL(join(resolve(otherDist), 'index.js')).href)) as {
    SqliteStore: typeof SqliteStore;
  };
  const template = await benchTurnCheckpoint();
  const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
  const builds = [
    { name: 'this build', store: new SqliteStore({ path: join(dir, 'this.db') }), us: [] as number[] },
    { name: otherDist, store: new other.SqliteStore({ path: join(dir, 'other.db') }), us: [] as number[] },
  ];
  try {
    const warmup = 200;
    let n = 0;
    const write = (store: SqliteStore) =>
      store.checkpoint({ ...template, sessionId: `w${n % 4}-${n}`, expectedRevision: 0 } satisfies SessionCheckpoint);
    for (; n < warmup + checkpoints; n++) {
      // Each goes first every other time.
      for (const build of n % 2 ? builds : [...builds].reverse()) {
        const t = performance.now();
        await write(build.store);
        if (n >= warmup) build.us.push((performance.now() - t) * 1000);
      }
    }
    const Database = createRequire(import.meta.url)('better-sqlite3') as typeof BetterSqlite3;
    const medians: number[] = [];
    for (const build of builds) {
      // After a full checkpoint the WAL restarts, so the frames in it are then the next writes'.
      const counter = new Database(build.store.path);
      const framesInWal = () => (counter.pragma('wal_checkpoint(PASSIVE)') as { log: number }[])[0]!.log;
      framesInWal();
      for (let i = 0; i < 50; i++, n++) await write(build.store);
      const frames = framesInWal() / 50;
      counter.close();
      const s = summarize(build.us);
      medians.push(s.median);
      console.log(
        `${build.name}: median ${f(s.median)} µs (p90 ${f(s.p90)}, mean ${f(s.mean)}), ${f(frames)} WAL frames per checkpoint`,
      );
    }
    console.log(
      `this build / ${otherDist}: ${(medians[0]! / medians[1]!).toFixed(2)} (medians of ${checkpoints} checkpoints each)`,
    );
  } finally {
    for (const build of builds) await build.store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}
