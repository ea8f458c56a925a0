import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import {
  MemoryStore,
  ScriptedModel,
  Trellis,
  TrellisError,
  type ModelRequest,
  type ScriptedReply,
  type SessionStore,
} from '../../../index.js';
import { dyingStore } from './support/dying-store.js';
import {
  FINAL_REPLY,
  LedgerPlugin,
  readLedger,
  stepsScript,
  useLedgers,
  type Ledgers,
} from '../../support/steps-workload.js';

/**
 * Durable steps at depth (issue 25, item 5): the top agent asks a sub-agent (agent as tool)
 * to do the workload's three tool rounds; the process dies right after every store write, at
 * both levels, and another app goes on with the top turn. Nothing completed repeats at any
 * level: the sub-agent's turn is keyed by its caller's call, so the caller running that call
 * again gets the sub-agent's turn as it ran, or goes on with it.
 */

interface Line {
  readonly key: string;
  readonly n: number;
}

let dir: string;
let files: Ledgers;
let topCalls = 0;

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-depth-steps-'));
  files = { model: join(dir, 'model.txt'), tools: join(dir, 'tools.txt') };
  topCalls = 0;
});

afterEach(() => rmSync(dir, { recursive: true, force: true }));

/** The top model: asks the writer once (a fresh call id), then answers with what it said. */
function topScript(request: ModelRequest): ScriptedReply {
  topCalls++;
  const tool = request.messages.filter((m) => m.role === 'tool').at(-1);
  if (tool === undefined)
    return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'ask_writer', args: { input: 'write four lines' } }] };
  return `desk: ${tool.content}`;
}

async function appOn(store: SessionStore) {
  const app = Trellis.create({ store, leaseTtlMs: 1_000 });
  await app.install(LedgerPlugin);
  app.agent({
    name: 'writer',
    model: new ScriptedModel(stepsScript()),
    instructions: 'Write the lines.',
    toolConcurrency: 2,
    plugins: ['ledger'],
  });
  const top = app.agent({
    name: 'desk',
    model: new ScriptedModel(topScript),
    instructions: 'Delegate.',
    plugins: [],
    agents: [{ agent: 'writer', name: 'ask_writer', description: 'Asks the writer to write lines.' }],
  });
  return { app, session: top.session('s1') };
}

/** The writer's child session and the keys of the calls its journal held results for. */
async function childAtCrash(store: SessionStore): Promise<Set<string>> {
  const finished = new Set<string>();
  for (const summary of await store.list()) {
    if (!summary.id.startsWith('s1>writer')) continue;
    const steps = ((await store.load(summary.id))?.steps ?? []) as { k: string; round: number; at: number }[];
    for (const step of steps) if (step.k === 'result') finished.add(`${summary.id}:0:${step.round}:${step.at}`);
  }
  return finished;
}

// Writes: the top's first response (1), the writer's 8 steps and checkpoint (2-10), the top's
// result and answer (11-12), the top's checkpoint (13).
describe('durable steps at depth', () => {
  it('journals both levels of an uninterrupted turn: 13 writes', async () => {
    useLedgers(files);
    const dying = dyingStore(new MemoryStore());
    const { session, app } = await appOn(dying.store);
    const result = await session.send('please write', { key: 'turn-1' });
    expect(result).toMatchObject({ status: 'completed', reply: `desk: ${FINAL_REPLY}` });
    expect(dying.writes()).toBe(13);
    await app.stop();
  });

  it.each(Array.from({ length: 13 }, (_, i) => i + 1))(
    'goes on after a crash right after write %i: no model call made again and no finished call run again, at either level',
    async (write) => {
      useLedgers(files);
      const shared = new MemoryStore();
      const dying = dyingStore(shared);
      const one = await appOn(dying.store);
      dying.dieAfterWrite(write);
      void one.session.send('please write', { key: 'turn-1' });
      while (!dying.dead()) await new Promise((resolve) => setTimeout(resolve, 2));
      const finished = await childAtCrash(shared);

      const two = await appOn(shared);
      const result = await two.session.send('please write', { key: 'turn-1', waitForLease: 5_000 });

      expect(result).toMatchObject({ status: 'completed', reply: `desk: ${FINAL_REPLY}` });
      expect(topCalls).toBe(2);
      expect(readLedger(files.model, Number)).toHaveLength(4);
      const runs = readLedger<Line>(files.tools);
      expect(new Set(runs.map((l) => l.key)).size).toBe(4);
      for (const n of [1, 2, 3, 4]) {
        const ofN = runs.filter((l) => l.n === n);
        expect(new Set(ofN.map((l) => l.key)).size).toBe(1);
        expect(ofN.length).toBeLessThanOrEqual(finished.has(ofN[0]!.key) ? 1 : 2);
      }
      const stored = await shared.load('s1');
      expect(stored?.turns.map((t) => [t.key, t.status])).toEqual([['turn-1', 'completed']]);
      const children = (await shared.list()).filter((s) => s.id.startsWith('s1>writer'));
      expect(children).toHaveLength(1);
      expect((await shared.load(children[0]!.id))?.turns.map((t) => t.status)).toEqual(['completed']);
      await two.app.stop();
    },
  );
});

describe('a turn whose journal cannot be written, in the same process', () => {
  it('fails with the store error, leaves its steps for the next send with its key, which goes on with it', async () => {
    useLedgers(files);
    const real = new MemoryStore();
    let refuse = 0;
    const store = new Proxy(real, {
      get(target, prop) {
        const value = Reflect.get(target, prop, target) as unknown;
        if (prop !== 'appendSteps' || typeof value !== 'function')
          return typeof value === 'function' ? (value as (...a: unknown[]) => unknown).bind(target) : value;
        return (...args: unknown[]) => {
          if (refuse-- === 1)
            return Promise.reject(new TrellisError('StoreUnavailable', 'the store went away', { retryable: true }));
          return (value as (...a: unknown[]) => Promise<number>).apply(target, args);
        };
      },
    });
    const app = Trellis.create({ store, leaseTtlMs: 1_000 });
    await app.install(LedgerPlugin);
    const session = app
      .agent({
        name: 'writer',
        model: new ScriptedModel(stepsScript()),
        instructions: 'Write the lines.',
        toolConcurrency: 2,
      })
      .session('s1');
    refuse = 2; // the 2nd append (the result of round 1's one call) fails

    await expect(session.send('write four lines', { key: 'turn-1' })).rejects.toMatchObject({
      code: 'StoreUnavailable',
    });
    const left = (await real.load('s1'))!;
    expect(left.turns).toEqual([]);
    expect(left.steps!.length).toBeGreaterThan(0);

    const result = await session.send('write four lines', { key: 'turn-1' });

    expect(result).toMatchObject({ status: 'completed', reply: FINAL_REPLY });
    expect(readLedger(files.model, Number)).toHaveLength(4);
    const runs = readLedger<Line>(files.tools);
    expect(new Set(runs.map((l) => l.key)).size).toBe(4);
    // The call whose result could not be journalled ran again, under its key; the others once.
    expect(runs).toHaveLength(5);
    expect((await real.load('s1'))!.turns.map((t) => [t.key, t.status])).toEqual([['turn-1', 'completed']]);
    await app.stop();
  });
});
