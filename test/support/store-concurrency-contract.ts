import { canReadRevision, type SessionStore } from '../../src/engine/stores/session-store.js';
import { checkpointOf, exchange, rejection } from './session-store-contract.js';
import type { StoreHarness } from './store-conformance.js';

const WRITERS = 20;

/**
 * What every store promises to concurrent writers and readers, through two handles on
 * the same data (as two processes would hold them), plus revision reads and the schema
 * ledger.
 */
export function describeConcurrencyContract(
  name: string,
  harness: StoreHarness,
  dispose: (store: SessionStore) => Promise<void>,
): void {
  describe(`${name} (concurrency and schema contract)`, () => {
    let store: SessionStore;
    let other: SessionStore;

    beforeEach(async () => {
      store = await harness.open();
      other = harness.sibling ? await harness.sibling(store) : store;
    });

    afterEach(async () => {
      if (other !== store) await other.close();
      await dispose(store);
    });

    /** Handle `i` of the writers alternates between the two, so they really contend. */
    const handle = (i: number) => (i % 2 === 0 ? store : other);

    it(`lets exactly one of ${WRITERS} concurrent checkpoints on one revision win; the others get StaleState and write nothing`, async () => {
      await store.checkpoint(checkpointOf('s1', 0, 0));

      const outcomes = await Promise.allSettled(
        Array.from({ length: WRITERS }, (_, i) =>
          handle(i).checkpoint(
            checkpointOf('s1', 1, 1, { state: { writer: i }, append: [{ role: 'user', content: `writer ${i}` }] }),
          ),
        ),
      );

      const won = outcomes.flatMap((o, i) => (o.status === 'fulfilled' ? [i] : []));
      expect(won).toHaveLength(1);
      for (const outcome of outcomes) {
        if (outcome.status === 'rejected') expect(outcome.reason).toMatchObject({ code: 'StaleState' });
      }
      const loaded = (await other.load('s1'))!;
      expect(loaded.revision).toBe(2);
      expect(loaded.state).toEqual({ writer: won[0] });
      expect(loaded.transcript).toEqual([...exchange(0), { role: 'user', content: `writer ${won[0]}` }]);
      expect(loaded.turns.map((t) => t.index)).toEqual([0, 1]);
    });

    it(`lets exactly one of ${WRITERS} concurrent creators of a session win`, async () => {
      const outcomes = await Promise.allSettled(
        Array.from({ length: WRITERS }, (_, i) =>
          handle(i).checkpoint(checkpointOf('fresh', 0, 0, { state: { writer: i } })),
        ),
      );

      expect(outcomes.filter((o) => o.status === 'fulfilled')).toHaveLength(1);
      expect(
        outcomes.filter((o) => o.status === 'rejected' && (o.reason as { code?: string }).code === 'StaleState'),
      ).toHaveLength(WRITERS - 1);
      const loaded = (await store.load('fresh'))!;
      expect(loaded.revision).toBe(1);
      expect(loaded.transcript).toEqual(exchange(0));
    });

    it(`grants a contended lease to exactly one of ${WRITERS} holders`, async () => {
      const granted = await Promise.all(
        Array.from({ length: WRITERS }, (_, i) => handle(i).acquireLease('s1', `holder-${i}`, 30_000)),
      );

      expect(granted.filter(Boolean)).toHaveLength(1);
      const winner = granted.indexOf(true);
      await expect(other.renewLease('s1', `holder-${winner}`, 30_000)).resolves.toBe(true);
      await expect(store.renewLease('s1', `holder-${(winner + 1) % WRITERS}`, 30_000)).resolves.toBe(false);
    });

    it('never shows a reader half a checkpoint while another handle writes', async () => {
      await store.checkpoint(checkpointOf('s1', 0, 0));
      let writing = true;
      const writer = (async () => {
        for (let revision = 1; revision < 30; revision++)
          await store.checkpoint(checkpointOf('s1', revision, revision));
        writing = false;
      })();
      const seen = new Set<number>();
      while (writing) {
        const snapshot = (await other.load('s1'))!;
        seen.add(snapshot.revision);
        // Each checkpoint adds two messages, one turn and sets the state: all or nothing.
        expect(snapshot.transcript).toHaveLength(2 * snapshot.revision);
        expect(snapshot.turns).toHaveLength(snapshot.revision);
        expect(snapshot.state).toEqual({ 'memory.turns': snapshot.revision });
      }
      await writer;

      expect((await other.load('s1'))!.revision).toBe(30);
      expect(seen.size).toBeGreaterThan(0);
    });

    it('refuses a checkpoint it cannot encode before writing anything', async () => {
      await store.checkpoint(checkpointOf('s1', 0, 0));
      const before = await store.load('s1');

      const error = await rejection(
        store.checkpoint(checkpointOf('s1', 1, 1, { append: [{ role: 'user', content: 'x', extra: 10n } as never] })),
      );

      expect(error.code).toBe('InvalidCheckpoint');
      expect(await other.load('s1')).toEqual(before);
    });

    it('reads revisions cheaply: undefined before, each checkpoint after, undefined after delete', async () => {
      if (!canReadRevision(store) || !canReadRevision(other))
        throw new Error(`${name} should implement RevisionReader`);
      await expect(store.revision('s1')).resolves.toBeUndefined();

      await store.checkpoint(checkpointOf('s1', 0, 0));
      await other.checkpoint(checkpointOf('s1', 1, 1));

      await expect(store.revision('s1')).resolves.toBe(2);
      await store.delete('s1');
      await expect(other.revision('s1')).resolves.toBeUndefined();
    });

    (harness.openFutureSchema ? it : it.skip)(
      'refuses to open data whose schema version is newer than this code knows',
      async () => {
        const error = await rejection(harness.openFutureSchema!());

        expect(error.code).toBe('UnsupportedSchema');
        expect(error.message).toMatch(/newer than version \d+ that this code knows/);
        expect(error.message).toMatch(/Upgrade Trellis/);
      },
    );
  });
}
