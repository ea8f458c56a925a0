/**
 * Child process of the SQLite crash test: `node --loader ts-node/esm sqlite-crash-child.ts <db>`.
 *
 * Writes one checkpoint, then starts a second, large one and parks inside its
 * transaction — after every statement ran, before COMMIT — printing `mid-transaction`
 * so the parent can SIGKILL it there. The pause is injected by wrapping
 * better-sqlite3's `Database.prototype.transaction`, so the store itself carries no
 * test hook.
 */
import { writeSync } from 'node:fs';
import Database from 'better-sqlite3';
import { SqliteStore } from '../../src/engine/stores/sqlite-store.js';

/** Messages in the interrupted checkpoint: about 2 MB, far more than the page cache below. */
const CRASH_MESSAGES = 1000;

type TransactionFn = (this: Database.Database, fn: (...args: unknown[]) => unknown) => (...args: unknown[]) => unknown;

let pauseBeforeCommit = false;
const transaction = Database.prototype.transaction as unknown as TransactionFn;
(Database.prototype as unknown as { transaction: TransactionFn }).transaction = function (fn) {
  // A small page cache makes SQLite spill the uncommitted pages into the WAL file, so the
  // parent tests recovery from a WAL holding half a transaction, not just a lost cache.
  this.pragma('cache_size = -256');
  return transaction.call(this, function (this: unknown, ...args: unknown[]) {
    const result = fn.apply(this, args);
    if (pauseBeforeCommit) {
      writeSync(1, 'mid-transaction\n');
      // Sleep without spinning until the parent kills us; never fall through to COMMIT.
      const parked = new Int32Array(new SharedArrayBuffer(4));
      for (;;) Atomics.wait(parked, 0, 0, 60_000);
    }
    return result;
  });
};

const path = process.argv[2];
if (!path) throw new Error('usage: sqlite-crash-child.ts <database path>');

const store = SqliteStore.open(path);
await store.checkpoint({
  sessionId: 'crash',
  agent: 'support',
  expectedRevision: 0,
  state: { 'memory.turns': 1 },
  append: [
    { role: 'user', content: 'first question' },
    { role: 'assistant', content: 'first answer' },
  ],
  turn: {
    index: 0,
    input: 'first question',
    status: 'completed',
    reply: 'first answer',
    rounds: 1,
    toolCalls: 0,
    usage: {},
    startedAt: '2025-01-01T00:00:00.000Z',
    endedAt: '2025-01-01T00:00:01.000Z',
  },
  suspension: null,
});
writeSync(1, 'first-committed\n');

pauseBeforeCommit = true;
const filler = 'x'.repeat(2000);
await store.checkpoint({
  sessionId: 'crash',
  agent: 'support',
  expectedRevision: 1,
  state: { 'memory.turns': 2, half: 'written' },
  append: Array.from({ length: CRASH_MESSAGES }, (_, i) => ({
    role: 'user' as const,
    content: `second ${i} ${filler}`,
  })),
  turn: {
    index: 1,
    input: 'second question',
    status: 'suspended',
    rounds: 1,
    toolCalls: 1,
    usage: {},
    startedAt: '2025-01-01T00:01:00.000Z',
    endedAt: '2025-01-01T00:01:01.000Z',
  },
  suspension: { version: 1, tickets: ['never committed'] },
});
writeSync(1, 'second-committed\n');
