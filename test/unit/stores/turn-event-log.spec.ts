import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TrellisError } from '../../../src/errors/trellis-error.js';
import { MemoryStore } from '../../../src/engine/stores/memory-store.js';
import type { SessionStore } from '../../../src/engine/stores/session-store.js';
import { SqliteStore } from '../../../src/engine/stores/sqlite-store.js';
import {
  canLogTurnEvents,
  TURN_EVENT_LIMITS,
  type RecordedTurnEvent,
  type TurnEventLog,
} from '../../../src/engine/stores/turn-event-log.js';
import { checkpointOf } from '../../support/session-store-contract.js';

const started = (turn: number, at = 1000): RecordedTurnEvent => ({
  at,
  event: { type: 'turn.started', sessionId: 's1', turn },
});
const commit = (revision: number, at: number): RecordedTurnEvent => ({
  at,
  event: { type: 'state.committed', sessionId: 's1', revision, keys: ['notes.count'] },
});

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-turn-events-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const stores: [string, () => SessionStore & TurnEventLog][] = [
  ['MemoryStore', () => new MemoryStore()],
  ['SqliteStore', () => SqliteStore.open(join(dir, `${Math.random().toString(36).slice(2)}.db`))],
];

describe.each(stores)('%s as a TurnEventLog', (_name, open) => {
  let store: SessionStore & TurnEventLog;
  beforeEach(async () => {
    store = open();
    await store.checkpoint(checkpointOf('s1', 0, 0));
  });
  afterEach(() => store.close());

  it('says it keeps turn events', () => {
    expect(canLogTurnEvents(store)).toBe(true);
    expect(canLogTurnEvents({})).toBe(false);
  });

  it('keeps each turn apart and appends a resumed turn after what it had', async () => {
    await store.appendTurnEvents('s1', 0, [started(0), commit(1, 1001)]);
    await store.appendTurnEvents('s1', 1, [started(1, 2000)]);
    await store.appendTurnEvents('s1', 0, [commit(2, 1500)]);

    expect(await store.turnEvents('s1', 0)).toEqual({
      events: [started(0), commit(1, 1001), commit(2, 1500)],
      dropped: 0,
    });
    expect(await store.turnEvents('s1', 1)).toEqual({ events: [started(1, 2000)], dropped: 0 });
    expect(await store.turnEvents('s1', 7)).toEqual({ events: [], dropped: 0 });
  });

  it('keeps at most maxEvents per turn and counts the rest as dropped', async () => {
    const many = Array.from({ length: TURN_EVENT_LIMITS.maxEvents + 5 }, (_, i) => commit(i, i));
    await store.appendTurnEvents('s1', 0, many.slice(0, 10));
    await store.appendTurnEvents('s1', 0, many.slice(10));
    await store.appendTurnEvents('s1', 0, [commit(99_999, 5)]);

    const stored = await store.turnEvents('s1', 0);
    expect(stored.events).toHaveLength(TURN_EVENT_LIMITS.maxEvents);
    expect(stored.events.at(-1)).toEqual(many[TURN_EVENT_LIMITS.maxEvents - 1]);
    expect(stored.dropped).toBe(6);
  });

  it('keeps at most maxBytes per turn, as a prefix of what happened', async () => {
    const big = (i: number): RecordedTurnEvent => ({
      at: i,
      event: {
        type: 'tool.started',
        sessionId: 's1',
        callId: `c${i}`,
        tool: 'notes.add',
        args: { text: 'x'.repeat(100_000) },
      },
    });
    await store.appendTurnEvents('s1', 0, [big(1), big(2), big(3), big(4), big(5), big(6), commit(1, 7)]);

    const stored = await store.turnEvents('s1', 0);
    expect(stored.events.map((e) => e.at)).toEqual([1, 2, 3, 4, 5]);
    expect(stored.dropped).toBe(2);
  });

  it('refuses events for a session it does not hold, and forgets them with the session', async () => {
    const error = await store.appendTurnEvents('nobody', 0, [started(0)]).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'SessionNotFound')).toBe(true);
    await store.appendTurnEvents('s1', 0, [started(0)]);

    await store.delete('s1');
    await store.checkpoint(checkpointOf('s1', 0, 0));

    expect(await store.turnEvents('s1', 0)).toEqual({ events: [], dropped: 0 });
  });

  it('refuses an event that is not { at, event }', async () => {
    await expect(store.appendTurnEvents('s1', 0, [{ at: 'now' } as unknown as RecordedTurnEvent])).rejects.toThrow(
      /not \{ at: number/,
    );
    expect(await store.turnEvents('s1', 0)).toEqual({ events: [], dropped: 0 });
  });
});

describe('SqliteStore turn events across connections', () => {
  it('are read back by another connection to the same file', async () => {
    const path = join(dir, 'shared.db');
    const writer = SqliteStore.open(path);
    await writer.checkpoint(checkpointOf('s1', 0, 0));
    await writer.appendTurnEvents('s1', 0, [started(0)]);
    const reader = SqliteStore.open(path, { readonly: true });

    expect((await reader.turnEvents('s1', 0)).events).toEqual([started(0)]);
    await reader.close();
    await writer.close();
  });
});
