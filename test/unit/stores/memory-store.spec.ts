import { MemoryStore } from '../../../src/engine/stores/memory-store.js';
import { checkpointOf } from '../../support/session-store-contract.js';
import { describeStoreConformance } from '../../support/store-conformance.js';

describeStoreConformance('MemoryStore', { open: () => new MemoryStore() });

describe('MemoryStore', () => {
  it('keeps its sessions after close, so a second app can resume from the same store', async () => {
    const store = new MemoryStore();
    await store.checkpoint(checkpointOf('s1', 0, 0));

    await store.close();

    expect((await store.load('s1'))!.revision).toBe(1);
  });

  it('refuses a checkpoint it cannot copy and leaves the session as it was', async () => {
    const store = new MemoryStore();
    await store.checkpoint(checkpointOf('s1', 0, 0));
    const before = await store.load('s1');

    await expect(store.checkpoint(checkpointOf('s1', 1, 1, { state: { callback: () => 1 } }))).rejects.toThrow();

    expect(await store.load('s1')).toEqual(before);
  });
});
