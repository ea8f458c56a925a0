import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  Trellis,
  TrellisError,
  type SessionStore,
  type ToolCallInfo,
} from '../../../index.js';
import {
  FINAL_REPLY,
  LedgerPlugin,
  readLedger,
  stepsScript,
  useLedgers,
  type Ledgers,
} from '../../support/steps-workload.js';

/**
 * A writer whose lease lapsed is fenced (issue 25, and issue 33 item 7): a process stalls in
 * the middle of a turn (a long GC pause, a stopped VM) past its lease, another one takes the
 * session over and finishes the turn; when the first one wakes up, it runs no tool and lands
 * no write. Stalls are made in this process: the first app's lease renewals hang, and its turn
 * waits at a hook or inside a tool until the other app is done.
 */

interface Line {
  readonly key: string;
  readonly n: number;
}

let dir: string;
let files: Ledgers;
/** Where the first app's turn stalls: before call n runs (its `tool.before_call`). */
let stallBefore: number | undefined;
let wake: () => void = () => undefined;
let stalled = false;

@Plugin({ name: 'stall', version: '1.0.0', description: 'Stalls a turn before a call' })
class StallPlugin {
  @Hook('tool.before_call')
  async before(info: ToolCallInfo) {
    if (stallBefore === undefined || (info.args as { n?: number }).n !== stallBefore) return info;
    stallBefore = undefined;
    stalled = true;
    await new Promise<void>((resolve) => (wake = resolve));
    return info;
  }
}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-fence-'));
  files = { model: join(dir, 'model.txt'), tools: join(dir, 'tools.txt') };
  stallBefore = undefined;
  stalled = false;
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The store as the stalling process sees it: while it is stalled, its lease renewals never come back. */
function stalledRenewals(real: MemoryStore): SessionStore {
  return new Proxy(real, {
    get(target, prop) {
      if (prop === 'renewLease' && stalled) return () => new Promise<never>(() => undefined);
      const value = Reflect.get(target, prop, target) as unknown;
      return typeof value === 'function' ? (value as (...args: unknown[]) => unknown).bind(target) : value;
    },
  });
}

async function appOn(store: SessionStore, plugins: readonly (new () => object)[] = []) {
  const app = Trellis.create({ store, leaseTtlMs: 1_000 });
  await app.install(LedgerPlugin);
  for (const plugin of plugins) await app.install(plugin);
  return {
    app,
    session: app
      .agent({
        name: 'writer',
        model: new ScriptedModel(stepsScript()),
        instructions: 'Write the lines.',
        toolConcurrency: 2,
      })
      .session('s1'),
  };
}

describe('a writer whose lease lapsed', () => {
  it('runs no tool once another writer took the session over: it wakes before a call, and is refused with LeaseLost', async () => {
    useLedgers(files);
    const shared = new MemoryStore();
    const first = await appOn(stalledRenewals(shared), [StallPlugin]);
    stallBefore = 4;
    const stalledTurn = first.session.send('write four lines', { key: 'turn-1' }).catch((error: unknown) => error);
    while (!stalled) await new Promise((resolve) => setTimeout(resolve, 5));

    // The stalled writer's lease lapses; another takes the session and finishes the turn.
    const second = await appOn(shared);
    const done = await second.session.send('write four lines', { key: 'turn-1', waitForLease: 5_000 });
    expect(done).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
    const runsBefore = readLedger<Line>(files.tools).length;

    stalled = false;
    wake();
    const woke = await stalledTurn;

    expect(TrellisError.is(woke, 'LeaseLost')).toBe(true);
    // Call 4 ran once, on the writer that took over; the woken writer ran nothing more.
    expect(readLedger<Line>(files.tools)).toHaveLength(runsBefore);
    expect(readLedger<Line>(files.tools).filter((l) => l.n === 4)).toHaveLength(1);
    const stored = (await shared.load('s1'))!;
    expect(stored.turns.map((t) => [t.key, t.status])).toEqual([['turn-1', 'completed']]);
    expect(stored.transcript.filter((m) => m.role === 'user')).toHaveLength(1);
    await second.app.stop();
  });

  it('lands no write once another writer took over: its step after a tool is refused with LeaseLost', async () => {
    const shared = new MemoryStore();
    let stallIn: number | undefined = 1;
    useLedgers(files, async (n) => {
      if (n !== stallIn) return;
      stallIn = undefined;
      stalled = true;
      await new Promise<void>((resolve) => (wake = resolve));
    });
    const first = await appOn(stalledRenewals(shared));
    const stalledTurn = first.session.send('write four lines', { key: 'turn-1' }).catch((error: unknown) => error);
    while (!stalled) await new Promise((resolve) => setTimeout(resolve, 5));

    const second = await appOn(shared);
    const done = await second.session.send('write four lines', { key: 'turn-1', waitForLease: 5_000 });
    expect(done).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
    const revision = (await shared.load('s1'))!.revision;

    stalled = false;
    wake();
    const woke = await stalledTurn;

    expect(TrellisError.is(woke, 'LeaseLost')).toBe(true);
    const stored = (await shared.load('s1'))!;
    expect(stored.revision).toBe(revision);
    expect(stored.steps).toBeUndefined();
    expect(stored.turns.map((t) => [t.key, t.status])).toEqual([['turn-1', 'completed']]);
    // Call 1 ran twice under one key (the stalled run, and the run of the writer that took over); nothing else twice.
    const runs = readLedger<Line>(files.tools);
    expect(runs.filter((l) => l.n === 1).map((l) => l.key)).toEqual([runs[0]!.key, runs[0]!.key]);
    expect(runs).toHaveLength(5);
    await second.app.stop();
  });
});
