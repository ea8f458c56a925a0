import type { SessionStore } from '../../src/engine/stores/session-store.js';
import { checkpointOf, rejection, sleep } from './session-store-contract.js';

/** Long enough that a lease cannot expire during a test step on a busy machine. */
const LIVE_MS = 30_000;
/** Short enough to wait out: the expiry tests sleep {@link PAST_EXPIRY_MS}. */
const SHORT_MS = 80;
const PAST_EXPIRY_MS = 250;

/** The per-session lease every store promises (see `SessionLease`). */
export function describeLeaseContract(
  name: string,
  open: () => SessionStore | Promise<SessionStore>,
  dispose: (store: SessionStore) => Promise<void>,
): void {
  describe(`${name} (session lease contract)`, () => {
    let store: SessionStore;

    beforeEach(async () => {
      store = await open();
    });

    afterEach(async () => {
      await dispose(store);
    });

    describe('acquireLease', () => {
      it('takes a free lease, even before the session exists, and refuses it to another holder', async () => {
        await expect(store.acquireLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(true);

        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(false);
        await expect(store.load('s1')).resolves.toBeUndefined();
      });

      it('extends the lease when its holder asks again', async () => {
        await store.acquireLease('s1', 'worker-a', SHORT_MS);

        await expect(store.acquireLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(true);
        await sleep(PAST_EXPIRY_MS);

        // Still held: the second acquire replaced the short expiry with a long one.
        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(false);
      });

      it('takes a lease whose holder let it expire', async () => {
        await store.acquireLease('s1', 'worker-a', SHORT_MS);
        await sleep(PAST_EXPIRY_MS);

        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(true);
        await expect(store.acquireLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(false);
      });

      it('keeps leases of different sessions apart', async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);

        await expect(store.acquireLease('s2', 'worker-b', LIVE_MS)).resolves.toBe(true);
        await expect(store.acquireLease('s2', 'worker-a', LIVE_MS)).resolves.toBe(false);
      });

      it('does not depend on the session row: a checkpoint leaves the lease alone', async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);
        await store.checkpoint(checkpointOf('s1', 0, 0));

        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(false);
      });

      it("is cleared by deleting the session, whoever holds it: the holder's fenced writes are refused, the id is free", async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);
        await store.checkpoint({ ...checkpointOf('s1', 0, 0), fence: 'worker-a' });
        await store.acquireLease('s2', 'worker-a', LIVE_MS);

        await expect(store.delete('s1')).resolves.toBe(true);

        await expect(store.checkpoint({ ...checkpointOf('s1', 0, 0), fence: 'worker-a' })).rejects.toMatchObject({
          code: 'LeaseLost',
        });
        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(false);
        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(true);
        // Only that session's lease: another session's stays held.
        await expect(store.acquireLease('s2', 'worker-b', LIVE_MS)).resolves.toBe(false);
      });
    });

    describe('renewLease', () => {
      it('keeps a live lease from expiring', async () => {
        await store.acquireLease('s1', 'worker-a', SHORT_MS);

        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(true);
        await sleep(PAST_EXPIRY_MS);

        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(false);
      });

      it('fails for a holder whose expired lease another holder took', async () => {
        await store.acquireLease('s1', 'worker-a', SHORT_MS);
        await sleep(PAST_EXPIRY_MS);
        await store.acquireLease('s1', 'worker-b', LIVE_MS);

        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(false);
        // The failed renewal took nothing from the new holder.
        await expect(store.renewLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(true);
      });

      it('renews an expired lease that nobody took: no one else can have held it meanwhile', async () => {
        await store.acquireLease('s1', 'worker-a', SHORT_MS);
        await sleep(PAST_EXPIRY_MS);

        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(true);
        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(false);
      });

      it('fails when there is no lease, or after the holder released it', async () => {
        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(false);
        await store.acquireLease('s1', 'worker-a', LIVE_MS);
        await store.releaseLease('s1', 'worker-a');

        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(false);
      });
    });

    describe('releaseLease', () => {
      it('frees the lease for the next holder at once', async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);

        await store.releaseLease('s1', 'worker-a');

        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(true);
      });

      it('does nothing when called by someone who does not hold the lease', async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);

        await expect(store.releaseLease('s1', 'worker-b')).resolves.toBeUndefined();
        await expect(store.releaseLease('nobody', 'worker-b')).resolves.toBeUndefined();

        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(false);
        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(true);
      });
    });

    // Only a store that says so releases a lease with a checkpoint; the others keep it (the kernel releases it).
    describe('a checkpoint with releaseLease', () => {
      it("gives up its holder's lease once written, when the store releasesLeaseOnCheckpoint; else leaves it", async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);

        await store.checkpoint(checkpointOf('s1', 0, 0, { releaseLease: 'worker-a' }));

        expect((await store.load('s1'))?.revision).toBe(1);
        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(
          store.releasesLeaseOnCheckpoint === true,
        );
      });

      it("leaves another holder's lease alone", async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);

        await store.checkpoint(checkpointOf('s1', 0, 0, { releaseLease: 'worker-b' }));

        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(true);
        await expect(store.acquireLease('s1', 'worker-c', LIVE_MS)).resolves.toBe(false);
      });

      it('keeps the lease when the checkpoint is refused (nothing was written)', async () => {
        await store.acquireLease('s1', 'worker-a', LIVE_MS);
        await store.checkpoint(checkpointOf('s1', 0, 0));

        const error = await rejection(store.checkpoint(checkpointOf('s1', 0, 1, { releaseLease: 'worker-a' })));

        expect(error.code).toBe('StaleState');
        await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(false);
        await expect(store.renewLease('s1', 'worker-a', LIVE_MS)).resolves.toBe(true);
      });

      it('is refused with an empty holder by a store that releases, before anything is written', async () => {
        if (store.releasesLeaseOnCheckpoint !== true) return;

        const error = await rejection(store.checkpoint(checkpointOf('s1', 0, 0, { releaseLease: '' })));

        expect(error.code).toBe('InvalidOptions');
        await expect(store.load('s1')).resolves.toBeUndefined();
      });
    });

    describe('bad arguments', () => {
      it.each([0, -5, 1.5, Number.NaN, Number.POSITIVE_INFINITY, 86_400_001])(
        'refuse a ttl of %p ms with InvalidOptions and take nothing',
        async (ttl) => {
          const error = await rejection(store.acquireLease('s1', 'worker-a', ttl));

          expect(error.code).toBe('InvalidOptions');
          expect(error.message).toMatch(/whole number of milliseconds/);
          await expect(store.acquireLease('s1', 'worker-b', LIVE_MS)).resolves.toBe(true);
          expect((await rejection(store.renewLease('s1', 'worker-b', ttl))).code).toBe('InvalidOptions');
        },
      );

      it('refuse an empty session id or holder', async () => {
        expect((await rejection(store.acquireLease('', 'worker-a', LIVE_MS))).code).toBe('InvalidOptions');
        expect((await rejection(store.acquireLease('s1', '', LIVE_MS))).message).toMatch(/needs a holder/);
        expect((await rejection(store.releaseLease('s1', ''))).code).toBe('InvalidOptions');
      });
    });
  });
}
