import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { SqliteStore, TrellisError } from '../../../index.js';
import type { SessionCheckpoint } from '../../../stores.js';

let dir: string;
let path: string;
const open: { close(): unknown }[] = [];

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-store-errors-'));
  path = join(dir, 'trellis.db');
});

afterEach(async () => {
  for (const item of open.splice(0)) await item.close();
  rmSync(dir, { recursive: true, force: true });
});

function store(): SqliteStore {
  const s = SqliteStore.open(path);
  open.push(s);
  return s;
}

function raw(): Database.Database {
  const db = new Database(path);
  open.push(db);
  return db;
}

function checkpoint(sessionId: string, text = 'hello'): SessionCheckpoint {
  return {
    sessionId,
    agent: 'a',
    expectedRevision: 0,
    state: {},
    append: [{ role: 'user', content: text }],
    turn: {
      index: 0,
      input: 'hi',
      status: 'completed',
      rounds: 1,
      toolCalls: 0,
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      startedAt: '',
      finishedAt: '',
    },
    suspension: null,
  } as unknown as SessionCheckpoint;
}

async function failure(work: Promise<unknown>): Promise<TrellisError> {
  try {
    await work;
  } catch (error) {
    expect(TrellisError.is(error)).toBe(true);
    return error as TrellisError;
  }
  throw new Error('expected a failure');
}

describe('SQLite store errors become TrellisErrors with a code and a hint', () => {
  it('a full disk (SQLITE_FULL) is StoreFull, and nothing half-written remains', async () => {
    const s = store();
    await s.checkpoint(checkpoint('small'));
    // Cap the file at its current size, as a full disk would.
    const { db } = s as unknown as { db: Database.Database };
    db.pragma(`max_page_count = ${Number(db.pragma('page_count', { simple: true }))}`);
    const error = await failure(s.checkpoint(checkpoint('big', 'x'.repeat(1_000_000))));
    expect(error).toMatchObject({
      code: 'StoreFull',
      retryable: true,
      details: expect.objectContaining({ sqliteCode: 'SQLITE_FULL', operation: 'checkpoint' }),
    });
    expect(error.message).toMatch(/disk/);
    expect(await s.load('big')).toBeUndefined();
    expect(await s.load('small')).toBeDefined();
  });

  it('a missing table is StoreSchema, pointing at trellis doctor', async () => {
    const s = store();
    await s.checkpoint(checkpoint('a'));
    raw().exec('DROP TABLE checkpoints');
    const error = await failure(s.load('a'));
    expect(error).toMatchObject({ code: 'StoreSchema', hint: expect.stringContaining('trellis doctor') });
    expect(error.message).toContain('no such table: checkpoints');
  });

  it('a file locked by another process is StoreBusy and retryable', async () => {
    const s = store();
    await s.checkpoint(checkpoint('a'));
    const other = raw();
    other.exec('BEGIN EXCLUSIVE');
    try {
      const error = await failure(s.checkpoint({ ...checkpoint('b') }));
      expect(error).toMatchObject({
        code: 'StoreBusy',
        retryable: true,
        hint: expect.stringMatching(/another process/),
      });
    } finally {
      other.exec('ROLLBACK');
    }
  }, 20_000);

  it('a file that is not a database is StoreCorrupt', async () => {
    writeFileSync(path, 'this is not a database, just text that is long enough to look like a header'.repeat(100));
    let caught: unknown;
    try {
      store();
    } catch (error) {
      caught = error;
    }
    expect(caught).toMatchObject({ code: 'StoreCorrupt', hint: expect.stringContaining('trellis doctor') });
  });

  it('an unreadable session row names the session and the way out', async () => {
    const s = store();
    await s.checkpoint(checkpoint('broken'));
    raw().prepare("UPDATE sessions SET state = '{not json' WHERE id = 'broken'").run();
    const error = await failure(s.load('broken'));
    expect(error).toMatchObject({
      code: 'InvalidCheckpoint',
      details: expect.objectContaining({ sessionId: 'broken' }),
    });
    expect(error.message).toContain('trellis sessions delete broken');
    expect(await s.delete('broken')).toBe(true);
    expect(await s.load('broken')).toBeUndefined();
  });
});
