import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  SqliteStore,
  suspend,
  Tool,
  Trellis,
  TrellisError,
} from '../../../index.js';
import type { SessionCheckpoint } from '../../../stores.js';

class NoInput {}

/** A tool that waits until the test lets it finish, so a turn can be held open. */
let release: () => void = () => undefined;
let runs = 0;

@Plugin({ name: 'slow', version: '1.0.0' })
class Slow {
  @Tool({ name: 'slow.work', description: 'Works until released. Use in tests.', input: NoInput })
  async work() {
    runs++;
    await new Promise<void>((resolve) => (release = resolve));
    return 'worked';
  }
}

/** One "process": its own app and its own connection to the shared SQLite file. */
async function processOn(path: string, script: (string | object)[]) {
  const app = Trellis.create({ store: SqliteStore.open(path) });
  await app.install(Slow);
  const session = app
    .agent({ name: 'a', model: new ScriptedModel(script as never), instructions: 'x' })
    .session('shared');
  return { app, session };
}

const work = { toolCalls: [{ name: 'slow.work', args: {} }] };

describe('one writer per session: the store lease', () => {
  let dir: string;
  beforeEach(() => {
    dir = mkdtempSync(join(tmpdir(), 'trellis-lease-'));
    runs = 0;
  });
  afterEach(() => rmSync(dir, { recursive: true, force: true }));

  it('refuses a second writer with SessionBusy before anything of its turn runs, and loses no turn', async () => {
    const path = join(dir, 'sessions.db');
    const a = await processOn(path, [work, 'A done']);
    const b = await processOn(path, [work, 'B done']);

    const first = a.session.send('from A');
    while (runs === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const refused = await b.session.send('from B').catch((error: unknown) => error);

    expect(TrellisError.is(refused, 'SessionBusy')).toBe(true);
    expect((refused as TrellisError).retryable).toBe(true);
    expect(runs).toBe(1);
    release();
    expect((await first).status).toBe('completed');

    // Once A's turn is saved, B's message goes through on the lease A released.
    const second = b.session.send('from B');
    while (runs === 1) await new Promise((resolve) => setTimeout(resolve, 5));
    release();
    expect((await second).status).toBe('completed');
    const stored = (await SqliteStore.open(path).load('shared'))!;
    expect(stored.turns.map((t) => [t.index, t.input, t.status])).toEqual([
      [0, 'from A', 'completed'],
      [1, 'from B', 'completed'],
    ]);
    await a.app.stop();
    await b.app.stop();
  });

  it('refuses a waitForLease that is not a number of milliseconds before anything runs (NaN would wait forever)', async () => {
    const path = join(dir, 'sessions.db');
    const a = await processOn(path, [work, 'A done']);
    for (const bad of [Number.NaN, -1, Number.POSITIVE_INFINITY, '5000']) {
      const refused = await a.session.send('x', { waitForLease: bad as number }).catch((error: unknown) => error);
      expect(TrellisError.is(refused, 'InvalidOptions')).toBe(true);
      expect((refused as TrellisError).message).toMatch(/waitForLease must be a number of milliseconds/);
      const notResumed = await a.session
        .resume({ decisions: [], waitForLease: bad as number })
        .catch((error: unknown) => error);
      expect(TrellisError.is(notResumed, 'InvalidOptions')).toBe(true);
      const notCancelled = await a.session
        .cancelPending({ waitForLease: bad as number })
        .catch((error: unknown) => error);
      expect(TrellisError.is(notCancelled, 'InvalidOptions')).toBe(true);
    }
    expect(runs).toBe(0);
    expect(a.session.transcript).toEqual([]);
    // The session still works.
    const first = a.session.send('fine', { waitForLease: 0 });
    while (runs === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    release();
    expect((await first).status).toBe('completed');
    await a.app.stop();
  });

  it("waits for the lease when asked to, then runs on the other writer's saved turn", async () => {
    const path = join(dir, 'sessions.db');
    const a = await processOn(path, [work, 'A done']);
    const b = await processOn(path, ['B done']);

    const first = a.session.send('from A');
    while (runs === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    const waiting = b.session.send('from B', { waitForLease: 10_000 });
    await new Promise((resolve) => setTimeout(resolve, 50));
    release();

    expect((await first).status).toBe('completed');
    const result = await waiting;
    expect(result.status).toBe('completed');
    expect(b.session.transcript.map((m) => m.content)).toEqual(['from A', '', 'worked', 'A done', 'from B', 'B done']);
    await a.app.stop();
    await b.app.stop();
  });
});

/** A memory store that records what the kernel asks of it around a turn's lease. */
class CountingStore extends MemoryStore {
  readonly releases: string[] = [];
  readonly checkpoints: { turn: number; status: string; releaseLease: string | undefined }[] = [];
  constructor(
    override readonly releasesLeaseOnCheckpoint: boolean,
    journals = true,
  ) {
    super();
    // A store without a step journal: the turn's only write is its checkpoint.
    if (!journals) Object.defineProperty(this, 'appendSteps', { value: undefined });
  }
  override async releaseLease(sessionId: string, holder: string): Promise<void> {
    this.releases.push(holder);
    return super.releaseLease(sessionId, holder);
  }
  override async checkpoint(checkpoint: SessionCheckpoint): Promise<number> {
    this.checkpoints.push({
      turn: checkpoint.turn.index,
      status: checkpoint.turn.status,
      releaseLease: checkpoint.releaseLease,
    });
    return super.checkpoint(checkpoint);
  }
}

@Plugin({ name: 'gated', version: '1.0.0' })
class Gated {
  @Tool({ name: 'gated.work', description: 'Works once approved. Use in tests.', input: NoInput })
  work() {
    return 'worked';
  }

  @Hook('tool.gate')
  gate() {
    return suspend({ message: 'Run it?', allowedDecisions: ['approve', 'reject'] });
  }
}

describe("a turn's lease ends with its last checkpoint", () => {
  async function sessionOn(store: CountingStore, script: (string | object)[]) {
    const app = Trellis.create({ store });
    await app.install(Gated);
    return {
      app,
      session: app.agent({ name: 'a', model: new ScriptedModel(script as never), instructions: 'x' }).session('s'),
    };
  }

  it("is given up inside the turn's checkpoint on a store that can, with no release call of its own", async () => {
    const store = new CountingStore(true);
    const { app, session } = await sessionOn(store, ['one', 'two']);

    await session.send('first');
    await session.send('second');

    expect(store.checkpoints.map((c) => [c.turn, typeof c.releaseLease])).toEqual([
      [0, 'string'],
      [1, 'string'],
    ]);
    expect(store.releases).toEqual([]);
    await expect(store.acquireLease('s', 'another-process', 30_000)).resolves.toBe(true);
    await app.stop();
  });

  it('is released by the kernel on a store that cannot, and by the kernel when the checkpoint is refused', async () => {
    const plain = new CountingStore(false);
    const first = await sessionOn(plain, ['one']);
    await first.session.send('first');
    expect(plain.checkpoints.map((c) => c.releaseLease)).toEqual([undefined]);
    expect(plain.releases).toHaveLength(1);
    await expect(plain.acquireLease('s', 'another-process', 30_000)).resolves.toBe(true);
    await first.app.stop();

    // Another writer saves the session while the turn runs: its checkpoint is refused
    // (nothing written), so the lease was not given up with it and the kernel releases it.
    // (On a store with a step journal the turn's next step is refused before that: see below.)
    const store = new CountingStore(true, false);
    const app = Trellis.create({ store });
    await app.install(Slow);
    const session = app
      .agent({ name: 'a', model: new ScriptedModel([work, 'done'] as never), instructions: 'x' })
      .session('s');
    runs = 0;
    const turn = session.send('first').catch((error: unknown) => error);
    while (runs === 0) await new Promise((resolve) => setTimeout(resolve, 5));
    await store.checkpoint({
      sessionId: 's',
      agent: 'a',
      expectedRevision: 0,
      state: {},
      append: [],
      turn: {
        index: 0,
        input: 'elsewhere',
        status: 'completed',
        rounds: 1,
        toolCalls: 0,
        usage: {},
        startedAt: '',
        endedAt: '',
      },
      suspension: null,
    });
    release();
    const refused = await turn;
    expect(TrellisError.is(refused, 'StaleState')).toBe(true);
    expect(store.checkpoints.at(-1)?.releaseLease).toEqual(expect.any(String));
    expect(store.releases).toHaveLength(1);
    await expect(store.acquireLease('s', 'another-process', 30_000)).resolves.toBe(true);
    const stale = { app };
    await stale.app.stop();
  });

  it("is kept through a resumed turn's earlier checkpoints and given up with its last", async () => {
    const store = new CountingStore(true);
    const { app, session } = await sessionOn(store, [
      { toolCalls: [{ id: 'c1', name: 'gated.work', args: {} }] },
      'done',
    ]);

    const suspended = await session.send('go');
    expect(suspended.status).toBe('suspended');
    await expect(store.acquireLease('s', 'another-process', 1)).resolves.toBe(true);
    await store.releaseLease('s', 'another-process');
    store.releases.length = 0;
    store.checkpoints.length = 0;

    const resumed = await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });

    expect(resumed.status).toBe('completed');
    // The claim of the approved call is saved first, still under the lease; the turn's end gives it up.
    expect(store.checkpoints.length).toBeGreaterThanOrEqual(2);
    expect(store.checkpoints.slice(0, -1).every((c) => c.releaseLease === undefined)).toBe(true);
    expect(store.checkpoints.at(-1)).toMatchObject({ turn: 0, status: 'completed' });
    expect(typeof store.checkpoints.at(-1)!.releaseLease).toBe('string');
    expect(store.releases).toEqual([]);
    await expect(store.acquireLease('s', 'another-process', 30_000)).resolves.toBe(true);
    await app.stop();
  });
});

describe("a turn's own lease TTL (SendOptions.leaseTtlMs)", () => {
  it('is the TTL the store is asked for, and a bad one is refused before anything runs', async () => {
    const store = new MemoryStore();
    const asked: number[] = [];
    const acquire = store.acquireLease.bind(store);
    // The store's prototype is frozen (the seal): a spy is an own property defined on the instance.
    Object.defineProperty(store, 'acquireLease', {
      value: (id: string, holder: string, ttlMs: number) => {
        asked.push(ttlMs);
        return acquire(id, holder, ttlMs);
      },
    });
    const app = Trellis.create({ store });
    const session = app
      .agent({ name: 'a', model: new ScriptedModel(['one', 'two']), instructions: 'x' })
      .session('ttl');
    await session.send('first');
    await session.send('second', { leaseTtlMs: 2_500 });
    // The app's default (10 s), then the turn's own.
    expect(asked).toEqual([10_000, 2_500]);
    for (const bad of [999, 1.5, 'soon']) {
      const refused = await session.send('x', { leaseTtlMs: bad as never }).catch((error: unknown) => error);
      expect(TrellisError.is(refused, 'InvalidOptions')).toBe(true);
      expect((refused as Error).message).toContain('leaseTtlMs must be a whole number of milliseconds from 1,000');
    }
    expect(asked).toHaveLength(2);
  });
});
