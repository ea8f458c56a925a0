import 'reflect-metadata';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { jest } from '@jest/globals';
import Database from 'better-sqlite3';
import { MemoryStore, ScriptedModel, SqliteStore, Trellis, type SessionStore } from '../../../index.js';

/**
 * Issue 34: a lease row written by a host whose clock was a day ahead blocked the session for
 * a day. A store judges leases by its own clock, and a lease whose expiry lies further ahead
 * than its own TTL holds nothing.
 */
const DAY = 86_400_000;

let dir: string;
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-clock-'));
});
afterEach(() => {
  jest.restoreAllMocks();
  rmSync(dir, { recursive: true, force: true });
});

/** Runs `work` as if this machine's wall clock were `aheadMs` ahead. */
async function withClockAhead<T>(aheadMs: number, work: () => Promise<T>): Promise<T> {
  const now = Date.now;
  const spy = jest.spyOn(Date, 'now').mockImplementation(() => now() + aheadMs);
  try {
    return await work();
  } finally {
    spy.mockRestore();
  }
}

async function sendsAtOnce(store: SessionStore, sessionId: string): Promise<string> {
  const app = Trellis.create({ store });
  try {
    const started = Date.now();
    const result = await app
      .agent({ name: 'a', model: new ScriptedModel(['hello']), instructions: '' })
      .session(sessionId)
      .send('hi');
    expect(Date.now() - started).toBeLessThan(5_000);
    return result.status;
  } finally {
    await app.stop();
  }
}

describe('a lease written by a clock a day ahead does not block the session', () => {
  it('SqliteStore: another process on the file takes it at once, and a turn runs', async () => {
    const path = join(dir, 'clock.db');
    const ahead = SqliteStore.open(path);
    const here = SqliteStore.open(path);
    try {
      await withClockAhead(DAY, () => ahead.acquireLease('s1', 'host-a-day-ahead:1:x', 10_000));
      expect((await here.listLeases()).map((l) => [l.sessionId, l.state])).toEqual([['s1', 'ahead']]);

      await expect(here.acquireLease('s1', 'here', 10_000)).resolves.toBe(true);
      await expect(ahead.renewLease('s1', 'host-a-day-ahead:1:x', 10_000)).resolves.toBe(false);
      await here.releaseLease('s1', 'here');
      await withClockAhead(DAY, () => ahead.acquireLease('s1', 'host-a-day-ahead:1:x', 10_000));
      expect(await sendsAtOnce(here, 's1')).toBe('completed');
    } finally {
      await ahead.close();
      await here.close();
    }
  });

  it('SqliteStore: a lease row whose expiry is no time at all, or a day away with a 10 s TTL written by hand, holds nothing; a live one of this clock still does', async () => {
    const path = join(dir, 'rows.db');
    const store = SqliteStore.open(path);
    const db = new Database(path);
    try {
      db.prepare('INSERT INTO session_leases (session_id, holder, expires_at, ttl_ms) VALUES (?, ?, ?, ?)').run(
        'garbage',
        'x',
        'never',
        10_000,
      );
      db.prepare('INSERT INTO session_leases (session_id, holder, expires_at, ttl_ms) VALUES (?, ?, ?, ?)').run(
        'far',
        'x',
        Date.now() + DAY,
        10_000,
      );
      db.prepare('INSERT INTO session_leases (session_id, holder, expires_at, ttl_ms) VALUES (?, ?, ?, ?)').run(
        'live',
        'x',
        Date.now() + 9_000,
        10_000,
      );
      expect((await store.listLeases()).map((l) => [l.sessionId, l.state, l.expiresAt === undefined])).toEqual([
        ['far', 'ahead', false],
        ['garbage', 'expired', true],
        ['live', 'live', false],
      ]);
      await expect(store.acquireLease('garbage', 'y', 10_000)).resolves.toBe(true);
      await expect(store.acquireLease('far', 'y', 10_000)).resolves.toBe(true);
      await expect(store.acquireLease('live', 'y', 10_000)).resolves.toBe(false);
    } finally {
      db.close();
      await store.close();
    }
  });

  it('SqliteStore: a long lease (1 h) of this clock holds; one from a clock an hour and a minute ahead does not', async () => {
    const store = SqliteStore.open(join(dir, 'long.db'));
    try {
      await store.acquireLease('long', 'a', 3_600_000);
      await expect(store.acquireLease('long', 'b', 10_000)).resolves.toBe(false);
      await withClockAhead(3_660_000, () => store.acquireLease('skewed', 'a', 10_000));
      await expect(store.acquireLease('skewed', 'b', 10_000)).resolves.toBe(true);
    } finally {
      await store.close();
    }
  });

  it('MemoryStore: a wall clock set a day ahead while a lease was taken does not stretch it: it expires after its TTL', async () => {
    const store = new MemoryStore();
    await withClockAhead(DAY, () => store.acquireLease('s1', 'a', 100));
    await new Promise((resolve) => setTimeout(resolve, 250));
    await expect(store.acquireLease('s1', 'b', 10_000)).resolves.toBe(true);
    expect((await store.listLeases()).map((l) => [l.holder, l.state])).toEqual([['b', 'live']]);
    await store.releaseLease('s1', 'b');
    await withClockAhead(DAY, () => store.acquireLease('s1', 'a', 100));
    await new Promise((resolve) => setTimeout(resolve, 250));
    expect(await sendsAtOnce(store, 's1')).toBe('completed');
  });
});
