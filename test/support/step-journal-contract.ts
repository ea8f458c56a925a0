import type { SessionStore } from '../../src/engine/stores/session-store.js';
import { canJournalSteps, type StepJournal } from '../../src/engine/stores/step-journal.js';
import { checkpointOf, exchange, rejection } from './session-store-contract.js';
import type { StoreHarness } from './store-conformance.js';

const WRITERS = 20;

type JournalStore = SessionStore & StepJournal;

/** A step as the kernel journals one; the store only keeps it. */
const step = (n: number) => ({ k: 'model', round: n, response: { text: `reply ${n}`, toolCalls: [] } });

/**
 * The step journal every store Trellis ships keeps (docs/durable-steps.md): appends are atomic, bump
 * the revision, follow the checkpoint revision rule and the lease fence, come back with the
 * session in order, and end with the next checkpoint.
 */
export function describeStepJournalContract(
  name: string,
  harness: StoreHarness,
  dispose: (store: SessionStore) => Promise<void>,
): void {
  describe(`${name} (step journal contract)`, () => {
    let store: JournalStore;
    let other: JournalStore;

    beforeEach(async () => {
      const opened = await harness.open();
      if (!canJournalSteps(opened)) throw new Error(`${name} has no step journal`);
      store = opened;
      const sibling = harness.sibling ? await harness.sibling(store) : store;
      other = sibling as JournalStore;
    });

    afterEach(async () => {
      if (other !== store) await other.close();
      await dispose(store);
    });

    const append = (s: JournalStore, sessionId: string, expectedRevision: number, steps: unknown[], fence?: string) =>
      s.appendSteps({ sessionId, agent: 'support', expectedRevision, steps, ...(fence !== undefined && { fence }) });

    it("creates a new session's row with the first step of its first turn, and gives the steps back in order", async () => {
      expect(await append(store, 's1', 0, [step(1)])).toBe(1);
      expect(await append(store, 's1', 1, [step(2), step(3)])).toBe(2);

      const loaded = (await other.load('s1'))!;
      expect(loaded).toMatchObject({
        id: 's1',
        agent: 'support',
        revision: 2,
        transcript: [],
        turns: [],
        state: {},
        suspension: null,
      });
      expect(loaded.steps).toEqual([step(1), step(2), step(3)]);
      expect((await other.list()).find((s) => s.id === 's1')).toMatchObject({ turns: 0, suspended: false });
    });

    it('bumps the revision, so a checkpoint built before the steps is refused and one built after them ends them', async () => {
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await append(store, 's1', 1, [step(1)]);

      expect((await rejection(store.checkpoint(checkpointOf('s1', 1, 1)))).code).toBe('StaleState');
      expect(await store.checkpoint(checkpointOf('s1', 2, 1))).toBe(3);

      const loaded = (await other.load('s1'))!;
      expect(loaded.steps).toBeUndefined();
      expect(loaded.transcript).toEqual([...exchange(0), ...exchange(1)]);
      expect(loaded.turns.map((t) => t.index)).toEqual([0, 1]);
    });

    it('refuses a stale append with StaleState and writes nothing', async () => {
      await append(store, 's1', 0, [step(1)]);

      expect((await rejection(append(other, 's1', 0, [step(9)]))).code).toBe('StaleState');
      expect((await rejection(append(other, 's1', 5, [step(9)]))).code).toBe('StaleState');
      expect((await rejection(append(other, 'missing', 3, [step(9)]))).code).toBe('SessionNotFound');
      expect(
        (
          await rejection(
            other.appendSteps({ sessionId: 's1', agent: 'billing', expectedRevision: 1, steps: [step(9)] }),
          )
        ).code,
      ).toBe('InvalidCheckpoint');
      const loaded = (await store.load('s1'))!;
      expect(loaded.revision).toBe(1);
      expect(loaded.steps).toEqual([step(1)]);
      expect(await store.load('missing')).toBeUndefined();
    });

    it('refuses steps that are empty or not JSON, before anything is written', async () => {
      expect((await rejection(append(store, 's1', 0, []))).code).toBe('InvalidCheckpoint');
      expect((await rejection(append(store, 's1', 0, [{ big: BigInt(1) }]))).code).toBe('InvalidCheckpoint');
      expect(await store.load('s1')).toBeUndefined();
    });

    it(`lets exactly one of ${WRITERS} concurrent appends on one revision win, over two handles`, async () => {
      await append(store, 's1', 0, [step(0)]);

      const outcomes = await Promise.allSettled(
        Array.from({ length: WRITERS }, (_, i) => append(i % 2 === 0 ? store : other, 's1', 1, [step(100 + i)])),
      );

      const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
      expect(won).toHaveLength(1);
      for (const outcome of outcomes)
        if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'StaleState' });
      const loaded = (await other.load('s1'))!;
      expect(loaded.revision).toBe(2);
      expect(loaded.steps).toEqual([step(0), step(100 + won[0]!)]);
    });

    it(`lets exactly one of ${WRITERS} concurrent first steps of a new session win`, async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: WRITERS }, (_, i) => append(i % 2 === 0 ? store : other, 'fresh', 0, [step(i)])),
      );

      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      expect(
        outcomes.filter((o) => o.status === 'rejected' && (o.reason as { code?: string }).code === 'StaleState'),
      ).toHaveLength(WRITERS - 1);
      expect((await store.load('fresh'))!.steps).toHaveLength(1);
    });

    describe('the fence', () => {
      it("refuses an append or a checkpoint whose fence is not the lease's holder with LeaseLost, and writes nothing", async () => {
        expect(await store.acquireLease('s1', 'holder-a', 30_000)).toBe(true);
        await append(store, 's1', 0, [step(1)], 'holder-a');

        expect((await rejection(append(other, 's1', 1, [step(2)], 'holder-b'))).code).toBe('LeaseLost');
        expect((await rejection(other.checkpoint(checkpointOf('s1', 1, 0, { fence: 'holder-b' })))).code).toBe(
          'LeaseLost',
        );
        expect((await store.load('s1'))!).toMatchObject({ revision: 1, steps: [step(1)], transcript: [] });

        expect(await other.checkpoint(checkpointOf('s1', 1, 0, { fence: 'holder-a' }))).toBe(2);
      });

      it('refuses a fenced write when nobody holds the lease, and lets one through for a holder whose expired lease nobody took', async () => {
        expect((await rejection(append(store, 's1', 0, [step(1)], 'holder-a'))).code).toBe('LeaseLost');
        expect(await store.load('s1')).toBeUndefined();

        expect(await store.acquireLease('s1', 'holder-a', 1)).toBe(true);
        await new Promise((resolve) => setTimeout(resolve, 20));
        expect(await append(store, 's1', 0, [step(1)], 'holder-a')).toBe(1);

        expect(await other.acquireLease('s1', 'holder-b', 30_000)).toBe(true);
        expect((await rejection(append(store, 's1', 1, [step(2)], 'holder-a'))).code).toBe('LeaseLost');
        expect(await append(other, 's1', 1, [step(2)], 'holder-b')).toBe(2);
      });
    });

    it('deletes the steps with the session', async () => {
      await append(store, 's1', 0, [step(1)]);
      expect(await store.delete('s1')).toBe(true);
      expect(await other.load('s1')).toBeUndefined();
      expect(await append(store, 's1', 0, [step(2)])).toBe(1);
      expect((await other.load('s1'))!.steps).toEqual([step(2)]);
    });
  });
}
