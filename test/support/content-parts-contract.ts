import { randomBytes } from 'node:crypto';
import type { ChatMessage } from '../../src/contract/model-provider.js';
import { toolContent } from '../../src/contract/content-part.js';
import { PART_INLINE_BYTES } from '../../src/engine/stores/part-blobs.js';
import type { SessionStore } from '../../src/engine/stores/session-store.js';
import { checkpointOf } from './session-store-contract.js';
import type { StoreHarness } from './store-conformance.js';

/**
 * Image and file parts in a store: small ones inline, large ones (over PART_INLINE_BYTES)
 * by reference; either way the transcript loads back equal, from another handle too.
 */
export function describeContentPartsContract(
  name: string,
  harness: StoreHarness,
  dispose: (store: SessionStore) => Promise<void>,
): void {
  describe(`${name}: content parts`, () => {
    let store: SessionStore;
    beforeEach(async () => {
      store = await harness.open();
    });
    afterEach(() => dispose(store));

    it('round-trips small and large images and files, in user messages and tool results, and large bytes shared by two messages', async () => {
      const small = randomBytes(1000).toString('base64');
      const large = randomBytes(PART_INLINE_BYTES + 1).toString('base64');
      const pdf = randomBytes(PART_INLINE_BYTES * 2).toString('base64');
      const messages: ChatMessage[] = [
        {
          role: 'user',
          content: 'Look',
          parts: [
            { type: 'text', text: 'Look' },
            { type: 'image', data: small, mediaType: 'image/png' },
            { type: 'image', data: large, mediaType: 'image/jpeg' },
            { type: 'file', data: pdf, mediaType: 'application/pdf', name: 'scan.pdf' },
          ],
        },
        { role: 'assistant', content: '', toolCalls: [{ id: 'c1', name: 'scans.fetch', arguments: '{}' }] },
        {
          role: 'tool',
          toolCallId: 'c1',
          name: 'scans.fetch',
          content: JSON.stringify(
            toolContent({ type: 'text', text: 'again' }, { type: 'image', data: large, mediaType: 'image/jpeg' }),
          ),
        },
        { role: 'assistant', content: 'Seen.' },
      ];
      await store.checkpoint(checkpointOf('parts-1', 0, 0, { append: messages }));
      const other = harness.sibling ? await harness.sibling(store) : store;
      const loaded = await other.load('parts-1');
      expect(loaded!.transcript).toEqual(messages);
      await store.checkpoint(
        checkpointOf('parts-1', 1, 1, {
          append: [
            { role: 'user', content: '', parts: [{ type: 'image', data: large, mediaType: 'image/jpeg' }] },
            { role: 'assistant', content: 'Same one.' },
          ],
        }),
      );
      expect((await other.load('parts-1'))!.transcript.at(-2)).toEqual({
        role: 'user',
        content: '',
        parts: [{ type: 'image', data: large, mediaType: 'image/jpeg' }],
      });
      if (other !== store) await other.close();
    });

    it('keeps one session’s blobs apart from another’s, and deletes them with the session', async () => {
      const large = randomBytes(PART_INLINE_BYTES + 10).toString('base64');
      const message: ChatMessage = {
        role: 'user',
        content: '',
        parts: [{ type: 'image', data: large, mediaType: 'image/png' }],
      };
      await store.checkpoint(checkpointOf('parts-a', 0, 0, { append: [message] }));
      await store.checkpoint(checkpointOf('parts-b', 0, 0, { append: [message] }));
      expect(await store.delete('parts-a')).toBe(true);
      expect((await store.load('parts-b'))!.transcript).toEqual([message]);
      expect(await store.load('parts-a')).toBeUndefined();
    });
  });
}
