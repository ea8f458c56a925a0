import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Plugin, ScriptedModel, SqliteStore, Tool, Trellis, TrellisError } from '../../../index.js';

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
  const session = app.agent({ name: 'a', model: new ScriptedModel(script as never), instructions: 'x' }).session('shared');
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
      const notResumed = await a.session.resume({ decisions: [], waitForLease: bad as number }).catch((error: unknown) => error);
      expect(TrellisError.is(notResumed, 'InvalidOptions')).toBe(true);
      const notCancelled = await a.session.cancelPending({ waitForLease: bad as number }).catch((error: unknown) => error);
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

  it('waits for the lease when asked to, then runs on the other writer\'s saved turn', async () => {
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
