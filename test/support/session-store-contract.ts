import { TrellisError } from '../../src/errors/trellis-error.js';
import type { ChatMessage } from '../../src/contract/model-provider.js';
import type { SessionCheckpoint, SessionStore, TurnRecord } from '../../src/engine/stores/session-store.js';

/** Builds a turn record with plausible defaults; `overrides` pin what a test cares about. */
export function turnRecord(index: number, overrides: Partial<TurnRecord> = {}): TurnRecord {
  return {
    index,
    input: `question ${index}`,
    status: 'completed',
    reply: `answer ${index}`,
    rounds: 1,
    toolCalls: 0,
    usage: { 'scripted:test': { inputTokens: 10, outputTokens: 5, totalTokens: 15 } },
    startedAt: '2025-01-01T00:00:00.000Z',
    endedAt: '2025-01-01T00:00:01.000Z',
    ...overrides,
  };
}

/** The exchange of one turn: a user message and the assistant's reply. */
export function exchange(index: number): ChatMessage[] {
  return [
    { role: 'user', content: `question ${index}` },
    { role: 'assistant', content: `answer ${index}` },
  ];
}

/** A checkpoint of turn `index` built on `expectedRevision`; `overrides` pin the rest. */
export function checkpointOf(
  sessionId: string,
  expectedRevision: number,
  index: number,
  overrides: Partial<SessionCheckpoint> = {},
): SessionCheckpoint {
  return {
    sessionId,
    agent: 'support',
    expectedRevision,
    state: { 'memory.turns': index + 1 },
    append: exchange(index),
    turn: turnRecord(index),
    suspension: null,
    ...overrides,
  };
}

/** The TrellisError `promise` rejects with; fails the test when it resolves or throws something else. */
export async function rejection(promise: Promise<unknown>): Promise<TrellisError> {
  try {
    await promise;
  } catch (error) {
    if (TrellisError.is(error)) return error;
    throw error;
  }
  throw new Error('expected the promise to reject');
}

/** Resolves after `ms` milliseconds. */
export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * The behaviour every {@link SessionStore} promises, run against each implementation so
 * that MemoryStore and SqliteStore cannot drift apart.
 */
export function describeSessionStore(
  name: string,
  open: () => SessionStore | Promise<SessionStore>,
  dispose: (store: SessionStore) => Promise<void> = (s) => s.close(),
): void {
  describe(`${name} (SessionStore contract)`, () => {
    let store: SessionStore;

    beforeEach(async () => {
      store = await open();
    });

    afterEach(async () => {
      await dispose(store);
    });

    describe('a new session', () => {
      it('is created by a checkpoint at revision 0 and loads back whole', async () => {
        const suspension = {
          version: 1,
          tickets: [{ callId: 'c1', message: 'Refund 40 EUR?', allowedDecisions: ['approve', 'reject'] }],
        };
        const revision = await store.checkpoint(
          checkpointOf('s1', 0, 0, { suspension, turn: turnRecord(0, { status: 'suspended' }) }),
        );

        expect(revision).toBe(1);
        const loaded = await store.load('s1');
        expect(loaded).toEqual({
          id: 's1',
          agent: 'support',
          createdAt: expect.any(String),
          updatedAt: expect.any(String),
          revision: 1,
          state: { 'memory.turns': 1 },
          transcript: exchange(0),
          turns: [turnRecord(0, { status: 'suspended' })],
          suspension,
        });
        expect(new Date(loaded!.createdAt).toISOString()).toBe(loaded!.createdAt);
        expect(loaded!.updatedAt).toBe(loaded!.createdAt);
      });

      it('loads as undefined when it was never stored', async () => {
        await expect(store.load('nobody')).resolves.toBeUndefined();
      });

      it('is refused when the checkpoint expects a revision of a session that does not exist', async () => {
        const error = await rejection(store.checkpoint(checkpointOf('ghost', 3, 0)));

        expect(error.code).toBe('SessionNotFound');
        await expect(store.load('ghost')).resolves.toBeUndefined();
      });
    });

    describe('later checkpoints', () => {
      it('append to the transcript, bump the revision and keep createdAt', async () => {
        await store.checkpoint(checkpointOf('s1', 0, 0));
        const first = await store.load('s1');
        await sleep(5);

        const revision = await store.checkpoint(
          checkpointOf('s1', 1, 1, {
            append: [...exchange(1), { role: 'tool', content: '{"ok":true}', toolCallId: 'c9', name: 'orders.lookup' }],
          }),
        );

        expect(revision).toBe(2);
        const loaded = (await store.load('s1'))!;
        expect(loaded.revision).toBe(2);
        expect(loaded.transcript).toEqual([
          ...exchange(0),
          ...exchange(1),
          { role: 'tool', content: '{"ok":true}', toolCallId: 'c9', name: 'orders.lookup' },
        ]);
        expect(loaded.turns.map((t) => t.index)).toEqual([0, 1]);
        expect(loaded.createdAt).toBe(first!.createdAt);
        expect(loaded.updatedAt > first!.updatedAt).toBe(true);
      });

      it('replace the turn record with the same index (a resumed turn) instead of adding one', async () => {
        await store.checkpoint(
          checkpointOf('s1', 0, 0, { turn: turnRecord(0, { status: 'suspended', reply: undefined }) }),
        );
        await store.checkpoint(
          checkpointOf('s1', 1, 0, {
            append: [{ role: 'assistant', content: 'refunded' }],
            turn: turnRecord(0, { reply: 'refunded', toolCalls: 1 }),
          }),
        );
        await store.checkpoint(checkpointOf('s1', 2, 1));

        const loaded = (await store.load('s1'))!;
        expect(loaded.turns).toEqual([turnRecord(0, { reply: 'refunded', toolCalls: 1 }), turnRecord(1)]);
        expect(loaded.transcript).toHaveLength(5);
      });

      it('keep turns ordered by index even when an earlier turn is replaced last', async () => {
        await store.checkpoint(checkpointOf('s1', 0, 0));
        await store.checkpoint(checkpointOf('s1', 1, 1));
        await store.checkpoint(checkpointOf('s1', 2, 0, { append: [], turn: turnRecord(0, { reply: 'corrected' }) }));

        const loaded = (await store.load('s1'))!;
        expect(loaded.turns.map((t) => [t.index, t.reply])).toEqual([
          [0, 'corrected'],
          [1, 'answer 1'],
        ]);
      });

      it('replace the state wholesale rather than merging it', async () => {
        await store.checkpoint(checkpointOf('s1', 0, 0, { state: { 'billing.credits': 10, 'app.user_id': 'u1' } }));
        await store.checkpoint(checkpointOf('s1', 1, 1, { state: { 'billing.credits': 7 } }));

        expect((await store.load('s1'))!.state).toEqual({ 'billing.credits': 7 });
      });

      it('set and clear the suspension', async () => {
        const ticket = {
          version: 2,
          turnIndex: 0,
          pending: [{ callId: 'c1', tool: 'refund', args: { amount: 40 } }],
          nested: { deep: [1, [2, { three: null }]] },
        };
        await store.checkpoint(checkpointOf('s1', 0, 0, { suspension: ticket }));
        expect((await store.load('s1'))!.suspension).toEqual(ticket);
        expect((await store.list())[0]!.suspended).toBe(true);

        await store.checkpoint(checkpointOf('s1', 1, 0, { suspension: null }));

        expect((await store.load('s1'))!.suspension).toBeNull();
        expect((await store.list())[0]!.suspended).toBe(false);
      });
    });

    describe('a stale checkpoint', () => {
      it('is refused with StaleState and writes nothing', async () => {
        await store.checkpoint(checkpointOf('s1', 0, 0));
        await store.checkpoint(checkpointOf('s1', 1, 1));
        const before = await store.load('s1');

        const error = await rejection(
          store.checkpoint(
            checkpointOf('s1', 1, 2, {
              state: { lost: true },
              suspension: { lost: true },
              append: [{ role: 'user', content: 'lost' }],
            }),
          ),
        );

        expect(error.code).toBe('StaleState');
        expect(error.message).toMatch(/reload the session and retry/i);
        expect(error.details).toEqual({ sessionId: 's1', expectedRevision: 1, storedRevision: 2 });
        expect(await store.load('s1')).toEqual(before);
      });

      it('is refused when it tries to create a session that already exists', async () => {
        await store.checkpoint(checkpointOf('s1', 0, 0));
        const before = await store.load('s1');

        const error = await rejection(store.checkpoint(checkpointOf('s1', 0, 0, { state: { other: 1 } })));

        expect(error.code).toBe('StaleState');
        expect(await store.load('s1')).toEqual(before);
      });

      it('is refused when another agent writes the session', async () => {
        await store.checkpoint(checkpointOf('s1', 0, 0));

        const error = await rejection(store.checkpoint(checkpointOf('s1', 1, 1, { agent: 'billing' })));

        expect(error.code).toBe('InvalidCheckpoint');
        expect((await store.load('s1'))!.revision).toBe(1);
      });
    });

    describe('list', () => {
      it('returns summaries, the most recently written first', async () => {
        await store.checkpoint(checkpointOf('a', 0, 0));
        await sleep(5);
        await store.checkpoint(checkpointOf('b', 0, 0, { agent: 'billing', suspension: { version: 1 } }));
        await sleep(5);
        await store.checkpoint(checkpointOf('a', 1, 1));

        const summaries = await store.list();

        expect(summaries.map((s) => s.id)).toEqual(['a', 'b']);
        expect(summaries).toEqual([
          { id: 'a', agent: 'support', turns: 2, updatedAt: (await store.load('a'))!.updatedAt, suspended: false },
          { id: 'b', agent: 'billing', turns: 1, updatedAt: (await store.load('b'))!.updatedAt, suspended: true },
        ]);
      });

      it('is empty for an empty store', async () => {
        await expect(store.list()).resolves.toEqual([]);
      });
    });

    describe('delete', () => {
      it('removes the session with its transcript and turns, and says whether it existed', async () => {
        await store.checkpoint(checkpointOf('s1', 0, 0));
        await store.checkpoint(checkpointOf('s1', 1, 1));

        await expect(store.delete('s1')).resolves.toBe(true);
        await expect(store.delete('s1')).resolves.toBe(false);
        await expect(store.load('s1')).resolves.toBeUndefined();
        await expect(store.list()).resolves.toEqual([]);

        // A new session under the same id starts empty: nothing of the old one survives.
        await store.checkpoint(checkpointOf('s1', 0, 5));
        const reborn = (await store.load('s1'))!;
        expect(reborn.transcript).toEqual(exchange(5));
        expect(reborn.turns.map((t) => t.index)).toEqual([5]);
      });
    });

    describe('isolation', () => {
      it('keeps the transcript, turns and state of each session apart', async () => {
        await store.checkpoint(checkpointOf('a', 0, 0, { state: { owner: 'a' } }));
        await store.checkpoint(checkpointOf('b', 0, 7, { state: { owner: 'b' } }));
        await store.checkpoint(checkpointOf('a', 1, 1, { state: { owner: 'a' } }));

        const a = (await store.load('a'))!;
        const b = (await store.load('b'))!;
        expect(a.transcript).toEqual([...exchange(0), ...exchange(1)]);
        expect(a.turns.map((t) => t.index)).toEqual([0, 1]);
        expect(b.transcript).toEqual(exchange(7));
        expect(b.turns.map((t) => t.index)).toEqual([7]);
        expect(b.state).toEqual({ owner: 'b' });
        expect(b.revision).toBe(1);

        await store.delete('b');
        expect((await store.load('a'))!.transcript).toHaveLength(4);
      });

      it('is not affected by mutating a checkpoint after writing it, or a session after loading it', async () => {
        const state = { nested: { list: [1, 2] } };
        const append: ChatMessage[] = [{ role: 'user', content: 'hi' }];
        const suspension = { tickets: ['t1'] };
        await store.checkpoint(checkpointOf('s1', 0, 0, { state, append, suspension }));
        state.nested.list.push(3);
        append.push({ role: 'user', content: 'sneaked in' });
        suspension.tickets.push('t2');

        const loaded = (await store.load('s1'))! as unknown as {
          state: typeof state;
          transcript: ChatMessage[];
          suspension: typeof suspension;
        };
        expect(loaded.state).toEqual({ nested: { list: [1, 2] } });
        expect(loaded.transcript).toEqual([{ role: 'user', content: 'hi' }]);
        expect(loaded.suspension).toEqual({ tickets: ['t1'] });

        loaded.state.nested.list.push(99);
        loaded.transcript.push({ role: 'user', content: 'sneaked in' });
        loaded.suspension.tickets.push('t3');
        const again = (await store.load('s1'))!;
        expect(again.state).toEqual({ nested: { list: [1, 2] } });
        expect(again.transcript).toHaveLength(1);
        expect(again.suspension).toEqual({ tickets: ['t1'] });
      });
    });
  });
}
