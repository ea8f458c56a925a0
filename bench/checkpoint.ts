import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { MemoryStore, SqliteStore, type SessionStore } from '../index.js';
import type { SessionCheckpoint, StoredSession } from '../stores.js';
import { checkResult, createBenchApp } from './bench-app.js';
import { perRound } from './sequential.js';
import { summarize } from './stats.js';
import { AUTH, AUTH_KEY, ROUNDS_PER_TURN, sessionScriptFn } from './workload.js';

/** A store that times the calls a turn makes to the real one. */
class TimedStore implements SessionStore {
  readonly checkpointUs: number[] = [];
  readonly loadUs: number[] = [];
  lastCheckpoint: SessionCheckpoint | undefined;
  constructor(private readonly inner: SessionStore) {}
  /** As the wrapped store: a turn's lease ends inside its last checkpoint (timed with it) when it can. */
  get releasesLeaseOnCheckpoint(): boolean | undefined {
    return this.inner.releasesLeaseOnCheckpoint;
  }
  async load(sessionId: string): Promise<StoredSession | undefined> {
    const t = performance.now();
    try {
      return await this.inner.load(sessionId);
    } finally {
      this.loadUs.push((performance.now() - t) * 1000);
    }
  }
  async checkpoint(checkpoint: SessionCheckpoint): Promise<number> {
    this.lastCheckpoint = checkpoint;
    const t = performance.now();
    try {
      return await this.inner.checkpoint(checkpoint);
    } finally {
      this.checkpointUs.push((performance.now() - t) * 1000);
    }
  }
  list() {
    return this.inner.list();
  }
  delete(sessionId: string) {
    return this.inner.delete(sessionId);
  }
  acquireLease(sessionId: string, holder: string, ttlMs: number) {
    return this.inner.acquireLease(sessionId, holder, ttlMs);
  }
  renewLease(sessionId: string, holder: string, ttlMs: number) {
    return this.inner.renewLease(sessionId, holder, ttlMs);
  }
  releaseLease(sessionId: string, holder: string) {
    return this.inner.releaseLease(sessionId, holder);
  }
  close() {
    return this.inner.close();
  }
}

/**
 * Checkpoints of figure 4's turn written straight to each new store file before anything is
 * timed: ~1,900 WAL frames (schema 6; ~2,700 with schema 5), so the WAL has passed SQLite's
 * 1,000-page auto-checkpoint and restarted, and the 2 MB page cache has filled, as in a
 * store that has been open a while.
 * Until then each commit appends to a growing WAL file, which costs ~10 µs more per
 * checkpoint here (docs/performance.md, "How it is measured"); that cost is reported
 * on its own (`newFileCheckpointUs`), not left to decide how many of figure 4's samples it
 * lands in.
 */
export const PRIMING_CHECKPOINTS = 300;
/** How many of a new file's first checkpoints `newFileCheckpointUs` covers. */
const NEW_FILE_CHECKPOINTS = 150;

/** A SqliteStore on a new file that has written {@link PRIMING_CHECKPOINTS}; µs of each. */
async function primedStore(path: string): Promise<{ store: SqliteStore; primingUs: number[] }> {
  const store = new SqliteStore({ path });
  const template = await benchTurnCheckpoint();
  const primingUs: number[] = [];
  for (let i = 0; i < PRIMING_CHECKPOINTS; i++) {
    const t = performance.now();
    await store.checkpoint({ ...template, sessionId: `priming-${i}`, expectedRevision: 0 });
    primingUs.push((performance.now() - t) * 1000);
  }
  return { store, primingUs };
}

export interface CheckpointFigures {
  readonly turns: number;
  /** Median µs per turn without a store and with a SqliteStore on a temp file. */
  readonly turnUsWithout: number;
  readonly turnUsWith: number;
  /** The difference: what the store adds to a turn (load of a new session + checkpoint). */
  readonly storeCostUsPerTurn: number;
  /** Median time inside `store.checkpoint` and `store.load`, measured around the calls. */
  readonly checkpointUs: number;
  readonly checkpointP90Us: number;
  readonly loadUs: number;
  /**
   * Median µs of a new file's first {@link NEW_FILE_CHECKPOINTS} checkpoints of the same turn,
   * written straight to the store (no app) while its WAL grows; figure 4's store is timed after.
   */
  readonly newFileCheckpointUs: number;
  /** The same, for the last 100 of the {@link PRIMING_CHECKPOINTS}: the store alone once warm. */
  readonly primedStoreOnlyUs: number;
}

/** Alternating blocks with and without the store, so both see the same machine. */
export async function checkpointFigures(turns: number, warmup: number): Promise<CheckpointFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
  const primed = await primedStore(join(dir, 'bench.db'));
  const store = new TimedStore(primed.store);
  try {
    const withStore = await createBenchApp({ store });
    const without = await createBenchApp();
    const run = (bench: typeof without, prefix: string) => async (i: number) => {
      const r = await bench.turn(`${prefix}${i}`);
      checkResult(r, `figure 4 (${prefix})`);
      return r.rounds;
    };
    const blocks = 4;
    const per = Math.ceil(turns / blocks);
    const a: number[] = [];
    const b: number[] = [];
    // The store's timings of every block's timed turns (one checkpoint and one load each),
    // not of the warm-up turns before them.
    const checkpointUs: number[] = [];
    const loadUs: number[] = [];
    for (let k = 0; k < blocks; k++) {
      a.push(...(await perRound('figure 4 (no store)', run(without, `n${k}-`), k === 0 ? warmup : 5, per)).samples);
      store.checkpointUs.length = 0;
      store.loadUs.length = 0;
      b.push(...(await perRound('figure 4 (sqlite)', run(withStore, `w${k}-`), k === 0 ? warmup : 5, per)).samples);
      checkpointUs.push(...store.checkpointUs.slice(-per));
      loadUs.push(...store.loadUs.slice(-per));
    }
    const turnUsWithout = summarize(a).median * ROUNDS_PER_TURN;
    const turnUsWith = summarize(b).median * ROUNDS_PER_TURN;
    const cp = summarize(checkpointUs);
    return {
      turns: per * blocks,
      turnUsWithout,
      turnUsWith,
      storeCostUsPerTurn: turnUsWith - turnUsWithout,
      checkpointUs: cp.median,
      checkpointP90Us: cp.p90,
      loadUs: summarize(loadUs).median,
      newFileCheckpointUs: summarize(primed.primingUs.slice(0, NEW_FILE_CHECKPOINTS)).median,
      primedStoreOnlyUs: summarize(primed.primingUs.slice(-100)).median,
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

export interface LongSessionFigures {
  readonly turns: number;
  /** Messages each turn appends (the same for every turn of the workload). */
  readonly messagesPerTurn: number;
  /** Median µs inside `store.checkpoint` over the first and the last tenth of the session's turns. */
  readonly firstTenthUs: number;
  readonly lastTenthUs: number;
  /** Transcript length when the last tenth began. */
  readonly transcriptAtLastTenth: number;
  /**
   * The same checkpoints written straight to the store (no agent, no growing transcript in
   * this process), first and last tenth: the store's own cost, apart from what a long-lived
   * session does to the process (its transcript in memory makes GC dearer).
   */
  readonly storeOnlyFirstTenthUs: number;
  readonly storeOnlyLastTenthUs: number;
}

/**
 * One session of `turns` turns against a SqliteStore: what a checkpoint costs when the
 * session is long. The cost should follow what the turn appended, not the transcript.
 */
export async function longSessionFigures(turns: number): Promise<LongSessionFigures> {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
  const store = new TimedStore((await primedStore(join(dir, 'long.db'))).store);
  try {
    const bench = await createBenchApp({ store, script: sessionScriptFn });
    const session = bench.agent.session('long', { context: { [AUTH_KEY]: AUTH } });
    let transcriptAtLastTenth = 0;
    const tenth = Math.max(1, Math.floor(turns / 10));
    for (let i = 0; i < turns; i++) {
      if (i === turns - tenth) transcriptAtLastTenth = session.transcript.length;
      checkResult(await session.send('Run the script.'), 'long session');
      bench.model.calls.length = 0;
    }
    const messagesPerTurn = session.transcript.length / turns;
    await session.end();
    const us = store.checkpointUs;
    const replayed = await replay(store.lastCheckpoint!, turns);
    return {
      turns,
      messagesPerTurn,
      firstTenthUs: summarize(us.slice(0, tenth)).median,
      lastTenthUs: summarize(us.slice(-tenth)).median,
      transcriptAtLastTenth,
      storeOnlyFirstTenthUs: summarize(replayed.slice(0, tenth)).median,
      storeOnlyLastTenthUs: summarize(replayed.slice(-tenth)).median,
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** `turns` copies of `template` written straight to a new session of a fresh (primed) store: µs per checkpoint. */
async function replay(template: SessionCheckpoint, turns: number): Promise<number[]> {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-bench-'));
  const { store } = await primedStore(join(dir, 'replay.db'));
  try {
    const us: number[] = [];
    let revision = 0;
    for (let i = 0; i < turns; i++) {
      const checkpoint = {
        ...template,
        sessionId: 'replay',
        expectedRevision: revision,
        turn: { ...template.turn, index: i },
      };
      const t = performance.now();
      revision = await store.checkpoint(checkpoint);
      us.push((performance.now() - t) * 1000);
    }
    return us;
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

/** The checkpoint of figure 4's turn (a new session, 42 messages), recorded from a real turn. */
export async function benchTurnCheckpoint(): Promise<SessionCheckpoint> {
  const store = new TimedStore(new MemoryStore());
  const bench = await createBenchApp({ store });
  checkResult(await bench.turn('template'), 'figure 4 (template)');
  return store.lastCheckpoint!;
}
