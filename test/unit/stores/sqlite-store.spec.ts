import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { TrellisError } from '../../../src/errors/trellis-error.js';
import type { SessionStore } from '../../../src/engine/stores/session-store.js';
import { applyMigrations, SQLITE_MIGRATIONS } from '../../../src/engine/stores/sqlite-migrations.js';
import { SqliteStore } from '../../../src/engine/stores/sqlite-store.js';
import { checkpointOf, exchange, turnRecord } from '../../support/session-store-contract.js';
import { describeStoreConformance } from '../../support/store-conformance.js';
import { tsNodeEnv } from '../../support/ts-node-child.js';

const CRASH_CHILD = fileURLToPath(new URL('../../support/sqlite-crash-child.ts', import.meta.url));
const PROJECT_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

const LATEST = SQLITE_MIGRATIONS.at(-1)!.version;
const tempDirs = new Set<string>();

function tempDir(): string {
  const dir = mkdtempSync(join(tmpdir(), 'trellis-sqlite-'));
  tempDirs.add(dir);
  return dir;
}

afterAll(() => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

function thrown(fn: () => unknown): TrellisError {
  try {
    fn();
  } catch (error) {
    if (TrellisError.is(error)) return error;
    throw error;
  }
  throw new Error('expected a TrellisError');
}

async function rejected(promise: Promise<unknown>): Promise<TrellisError> {
  try {
    await promise;
  } catch (error) {
    if (TrellisError.is(error)) return error;
    throw error;
  }
  throw new Error('expected a TrellisError');
}

/**
 * A file as an older Trellis left it: migrated to `version` only, with session `s1` at
 * `revision` holding `messages` (each given as JSON text) in that version's layout: one row
 * per message before schema 4, from schema 4 batches of `batchSize` messages, each a JSON
 * array numbered by the transcript index of its first message. `turns` are turn records
 * (JSON text) of turns 0, 1, …
 */
function olderFile(
  path: string,
  version: number,
  revision: number,
  messages: readonly string[],
  batchSize = 1,
  turns: readonly string[] = [],
): void {
  const old = new Database(path);
  applyMigrations(old, SQLITE_MIGRATIONS.slice(0, version));
  const created = '2025-01-01T00:00:00.000Z';
  if (version < 4) {
    old
      .prepare(
        `INSERT INTO sessions (id, agent, revision, state, suspension, created_at, updated_at) VALUES ('s1', 'support', ?, '{}', 'null', ?, ?)`,
      )
      .run(revision, created, created);
    const insert = old.prepare(`INSERT INTO messages VALUES ('s1', ?, ?)`);
    messages.forEach((message, seq) => insert.run(seq, message));
  } else {
    old
      .prepare(
        `INSERT INTO sessions (id, agent, revision, state, suspension, created_at, updated_at, message_count) VALUES ('s1', 'support', ?, '{}', 'null', ?, ?, ?)`,
      )
      .run(revision, created, created, messages.length);
    const insert = old.prepare(`INSERT INTO message_batches VALUES ('s1', ?, ?)`);
    for (let seq = 0; seq < messages.length; seq += batchSize)
      insert.run(seq, `[${messages.slice(seq, seq + batchSize).join(',')}]`);
  }
  const insertTurn = old.prepare(`INSERT INTO turns VALUES ('s1', ?, ?)`);
  turns.forEach((record, index) => insertTurn.run(index, record));
  old.close();
}

const OLD_EXCHANGE = ['{"role":"user","content":"question 0"}', '{"role":"assistant","content":"answer 0"}'];

/** Edits the file behind the store's back, as a damaged disk or a hand-edit would. */
function tamper(path: string, sql: string): void {
  const db = new Database(path);
  db.exec(sql);
  db.close();
}

describeStoreConformance('SqliteStore', {
  open: () => SqliteStore.open(join(tempDir(), 'trellis.db')),
  // Another connection to the same file, as a second process holds it.
  sibling: (store) => SqliteStore.open((store as SqliteStore).path),
  openFutureSchema: async () => {
    const path = join(tempDir(), 'future.db');
    await SqliteStore.open(path).close();
    tamper(
      path,
      `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${LATEST + 1}, 'from-the-future', '2030-01-01')`,
    );
    return SqliteStore.open(path);
  },
});

describe('SqliteStore', () => {
  let path: string;
  let store: SessionStore | undefined;

  beforeEach(() => {
    path = join(tempDir(), 'trellis.db');
  });

  afterEach(async () => {
    await store?.close();
    store = undefined;
  });

  describe('opening a file', () => {
    it('creates the folder, switches the file to WAL and records the migrations it applied', async () => {
      path = join(tempDir(), 'nested', 'deeper', 'trellis.db');
      store = new SqliteStore({ path });
      await store.close();

      const db = new Database(path, { readonly: true });
      expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
      expect(db.prepare('SELECT version, name FROM schema_migrations ORDER BY version').all()).toEqual(
        SQLITE_MIGRATIONS.map(({ version, name }) => ({ version, name })),
      );
      db.close();
    });

    it('reopens an existing file with its sessions and without migrating again', async () => {
      store = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await store.close();
      const ledger = () => {
        const db = new Database(path, { readonly: true });
        const rows = db.prepare('SELECT * FROM schema_migrations').all();
        db.close();
        return rows;
      };
      const before = ledger();

      store = SqliteStore.open(path);

      expect((await store.load('s1'))!.transcript).toEqual(exchange(0));
      await expect(store.checkpoint(checkpointOf('s1', 1, 1))).resolves.toBe(2);
      expect(ledger()).toEqual(before);
    });

    it('upgrades a file written before leases existed, keeping its sessions', async () => {
      olderFile(path, 1, 1, OLD_EXCHANGE);

      store = SqliteStore.open(path);

      expect((await store.load('s1'))!.transcript).toEqual(exchange(0));
      await expect(store.acquireLease('s1', 'worker-a', 30_000)).resolves.toBe(true);
      await expect(store.acquireLease('s1', 'worker-b', 30_000)).resolves.toBe(false);
    });

    it('upgrades a file with one row per message to one row per checkpoint, continuing its numbering', async () => {
      olderFile(path, 3, 2, [
        ...OLD_EXCHANGE,
        '{"role":"user","content":"question 1"}',
        '{"role":"assistant","content":"answer 1"}',
      ]);

      store = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('s1', 2, 2));

      expect((await store.load('s1'))!.transcript).toEqual([...exchange(0), ...exchange(1), ...exchange(2)]);
      const db = new Database(path, { readonly: true });
      expect(db.prepare('SELECT seq FROM checkpoints ORDER BY id').pluck().all()).toEqual([0, 1, 2, 3, 4]);
      expect(db.prepare(`SELECT name FROM sqlite_master WHERE name = 'messages'`).get()).toBeUndefined();
      db.close();
    });

    it.each([4, 5])(
      'upgrades a file of schema %i to one row per checkpoint, keeping every batch and turn record, its turn count, and continuing the numbering',
      async (version) => {
        const messages = [
          ...OLD_EXCHANGE,
          '{"role":"user","content":"question 1"}',
          '{"role":"assistant","content":"answer 1"}',
          '{"role":"user","content":"question 2"}',
        ];
        olderFile(path, version, 2, messages, 2, [JSON.stringify(turnRecord(0)), JSON.stringify(turnRecord(1))]);

        store = SqliteStore.open(path);
        expect((await store.list()).map((s) => s.turns)).toEqual([2]);
        await store.checkpoint(checkpointOf('s1', 2, 2));
        await store.checkpoint(checkpointOf('s1', 3, 1, { append: [], turn: turnRecord(1, { reply: 'corrected' }) }));

        const loaded = (await store.load('s1'))!;
        expect(loaded.transcript).toEqual([
          ...exchange(0),
          ...exchange(1),
          { role: 'user', content: 'question 2' },
          ...exchange(2),
        ]);
        expect(loaded.turns).toEqual([turnRecord(0), turnRecord(1, { reply: 'corrected' }), turnRecord(2)]);
        expect((await store.list()).map((s) => s.turns)).toEqual([3]);
        const db = new Database(path, { readonly: true });
        // The batches, then the turn records (without messages, where the transcript ended), then the new rows.
        expect(
          db.prepare('SELECT seq, json_array_length(messages) AS n, turn_index FROM checkpoints ORDER BY id').all(),
        ).toEqual([
          { seq: 0, n: 2, turn_index: null },
          { seq: 2, n: 2, turn_index: null },
          { seq: 4, n: 1, turn_index: null },
          { seq: 5, n: 0, turn_index: 0 },
          { seq: 5, n: 0, turn_index: 1 },
          { seq: 5, n: 2, turn_index: 2 },
          { seq: 7, n: 0, turn_index: 1 },
        ]);
        expect(db.prepare(`SELECT name FROM sqlite_master WHERE name IN ('message_batches', 'turns')`).all()).toEqual(
          [],
        );
        expect(db.prepare(`SELECT sql FROM sqlite_master WHERE name = 'checkpoints'`).pluck().get()).not.toMatch(
          /WITHOUT ROWID/i,
        );
        expect(
          db.prepare(`SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'sessions'`).pluck().all(),
        ).toEqual(['sqlite_autoindex_sessions_1']);
        db.close();
      },
    );

    it.each([3, 4, 5])(
      'keeps a damaged message damaged through the upgrade from schema %i, so the load still names it',
      async (version) => {
        olderFile(path, version, 1, [OLD_EXCHANGE[0]!, '{"role":']);

        store = SqliteStore.open(path);
        const error = await rejected(store.load('s1'));

        expect(error.code).toBe('InvalidCheckpoint');
        expect(error.details).toEqual({ sessionId: 's1', column: 'checkpoints.messages (batch from seq 1)' });
      },
    );

    it.each([4, 5])(
      'keeps a damaged turn record damaged through the upgrade from schema %i, so the load still names it',
      async (version) => {
        olderFile(path, version, 1, OLD_EXCHANGE, 2, ['{"index": 0, "status":']);

        store = SqliteStore.open(path);
        const error = await rejected(store.load('s1'));

        expect(error.code).toBe('InvalidCheckpoint');
        expect(error.details).toEqual({ sessionId: 's1', column: 'checkpoints.record (index 0)' });
      },
    );

    it('refuses a file written by a newer schema version, saying what to do', async () => {
      await SqliteStore.open(path).close();
      tamper(
        path,
        `INSERT INTO schema_migrations (version, name, applied_at) VALUES (${LATEST + 1}, 'from-the-future', '2030-01-01')`,
      );

      const error = thrown(() => SqliteStore.open(path));

      expect(error.code).toBe('UnsupportedSchema');
      expect(error.message).toMatch(new RegExp(`schema version ${LATEST + 1}, newer than version ${LATEST}`));
      expect(error.message).toMatch(/Upgrade Trellis/);
      expect(error.details).toMatchObject({ version: LATEST + 1, latest: LATEST });
    });

    it('opens readonly for reading, and refuses to write through it', async () => {
      const writer = SqliteStore.open(path);
      await writer.checkpoint(checkpointOf('s1', 0, 0));
      await writer.close();

      store = new SqliteStore({ path, readonly: true });

      expect((await store.load('s1'))!.revision).toBe(1);
      expect((await rejected(store.checkpoint(checkpointOf('s1', 1, 1)))).code).toBe('InvalidOptions');
      expect((await rejected(store.delete('s1'))).code).toBe('InvalidOptions');
    });

    it('refuses readonly on an older file, and with upgrade migrates it first, then reads only', async () => {
      olderFile(path, 3, 1, OLD_EXCHANGE);

      expect(thrown(() => new SqliteStore({ path, readonly: true })).code).toBe('UnsupportedSchema');
      store = new SqliteStore({ path, readonly: true, upgrade: true });

      expect((await store.load('s1'))!.transcript).toEqual(exchange(0));
      expect((await rejected(store.checkpoint(checkpointOf('s1', 1, 1)))).code).toBe('InvalidOptions');
    });

    it('refuses readonly on a file that does not exist instead of creating it', () => {
      expect(thrown(() => new SqliteStore({ path, readonly: true })).code).toBe('InvalidOptions');
      expect(existsSync(path)).toBe(false);
    });
  });

  describe('a stored row that does not parse', () => {
    it.each([
      ['sessions.state', `UPDATE sessions SET state = '{"truncated'`],
      ['sessions.state', `UPDATE sessions SET state = '[1, 2]'`],
      ['sessions.suspension', `UPDATE sessions SET suspension = 'not json'`],
      ['checkpoints.messages (batch from seq 0)', `UPDATE checkpoints SET messages = '[{"role":' WHERE seq = 0`],
      [
        'checkpoints.messages (batch from seq 2)',
        `UPDATE checkpoints SET messages = '{"role":"user","content":"not in an array"}' WHERE seq = 2`,
      ],
      [
        'checkpoints.messages (seq 3)',
        `UPDATE checkpoints SET messages = '[{"role":"user","content":"question 1"},"just a string"]' WHERE seq = 2`,
      ],
      ['checkpoints (batch from seq 2)', `DELETE FROM checkpoints WHERE seq = 0`],
      ['sessions.message_count', `UPDATE sessions SET message_count = 3`],
      ['checkpoints.record (index 1)', `UPDATE checkpoints SET record = '{"index": 9}' WHERE turn_index = 1`],
    ])('fails the load with InvalidCheckpoint naming the session and %s', async (column, sql) => {
      store = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await store.checkpoint(checkpointOf('s1', 1, 1));
      tamper(path, sql);

      const error = await rejected(store.load('s1'));

      expect(error.code).toBe('InvalidCheckpoint');
      expect(error.kind).toBe('system');
      expect(error.message).toContain('"s1"');
      expect(error.message).toContain(column);
      expect(error.details).toEqual({ sessionId: 's1', column });
    });

    it('does not affect loading other sessions', async () => {
      store = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('bad', 0, 0));
      await store.checkpoint(checkpointOf('good', 0, 0));
      tamper(path, `UPDATE sessions SET state = '{' WHERE id = 'bad'`);

      expect((await store.load('good'))!.revision).toBe(1);
    });
  });

  describe('checkpoint', () => {
    it('refuses state that is not JSON and writes nothing', async () => {
      store = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('s1', 0, 0));
      const before = await store.load('s1');

      const error = await rejected(store.checkpoint(checkpointOf('s1', 1, 1, { state: { big: 10n } })));

      expect(error.code).toBe('InvalidCheckpoint');
      expect(error.message).toMatch(/state .*JSON/);
      expect(await store.load('s1')).toEqual(before);
    });

    it('refuses a message that is not JSON, naming it, and writes nothing', async () => {
      store = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('s1', 0, 0));
      const before = await store.load('s1');
      const append = [...exchange(1), { role: 'tool', content: 'total', tokens: 10n } as never];

      const error = await rejected(store.checkpoint(checkpointOf('s1', 1, 1, { append })));

      expect(error.code).toBe('InvalidCheckpoint');
      expect(error.details).toEqual({ sessionId: 's1', field: 'append[2]' });
      expect(await store.load('s1')).toEqual(before);
    });

    it('writes each checkpoint as one row of its messages and turn record, numbered from where the transcript stands', async () => {
      store = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('s1', 0, 0));
      await store.checkpoint(checkpointOf('s1', 1, 1, { append: [] }));
      await store.checkpoint(
        checkpointOf('s1', 2, 2, { append: [...exchange(2), { role: 'user', content: 'and one more' }] }),
      );

      const db = new Database(path, { readonly: true });
      expect(
        db
          .prepare(
            `SELECT seq, json_array_length(messages) AS n, turn_index, json_extract(record, '$.index') AS record FROM checkpoints ORDER BY id`,
          )
          .all(),
      ).toEqual([
        { seq: 0, n: 2, turn_index: 0, record: 0 },
        { seq: 2, n: 0, turn_index: 1, record: 1 },
        { seq: 2, n: 3, turn_index: 2, record: 2 },
      ]);
      expect(db.prepare('SELECT message_count, turn_count, last_turn_index FROM sessions').get()).toEqual({
        message_count: 5,
        turn_count: 3,
        last_turn_index: 2,
      });
      db.close();
      expect((await store.load('s1'))!.transcript).toHaveLength(5);
    });

    it('counts a turn once however often it is written, and in any order of indexes', async () => {
      store = SqliteStore.open(path);
      await store.checkpoint(
        checkpointOf('s1', 0, 0, { turn: turnRecord(0, { status: 'suspended', reply: undefined }) }),
      );
      await store.checkpoint(checkpointOf('s1', 1, 0, { append: [] }));
      await store.checkpoint(checkpointOf('s1', 2, 5, { append: [] }));
      await store.checkpoint(checkpointOf('s1', 3, 3, { append: [] }));
      await store.checkpoint(checkpointOf('s1', 4, 3, { append: [], turn: turnRecord(3, { reply: 'again' }) }));
      await store.checkpoint(checkpointOf('s1', 5, 0, { append: [], turn: turnRecord(0, { reply: 'last' }) }));

      expect((await store.list()).map((s) => s.turns)).toEqual([3]);
      expect((await store.load('s1'))!.turns.map((t) => [t.index, t.reply])).toEqual([
        [0, 'last'],
        [3, 'again'],
        [5, 'answer 5'],
      ]);
    });

    it('reads only the last record written of a turn, so a replaced one that was damaged does not fail the load', async () => {
      store = SqliteStore.open(path);
      await store.checkpoint(
        checkpointOf('s1', 0, 0, { turn: turnRecord(0, { status: 'suspended', reply: undefined }) }),
      );
      await store.checkpoint(checkpointOf('s1', 1, 0, { append: [] }));
      tamper(path, `UPDATE checkpoints SET record = '{"index":' WHERE id = (SELECT MIN(id) FROM checkpoints)`);

      expect((await store.load('s1'))!.turns).toEqual([turnRecord(0)]);
    });

    it('detects a stale revision written through another connection to the same file', async () => {
      store = SqliteStore.open(path);
      const other = SqliteStore.open(path);
      await store.checkpoint(checkpointOf('s1', 0, 0));
      expect((await other.load('s1'))!.revision).toBe(1);

      await other.checkpoint(checkpointOf('s1', 1, 1));
      const error = await rejected(
        store.checkpoint(checkpointOf('s1', 1, 1, { append: [{ role: 'user', content: 'lost' }] })),
      );
      await other.close();

      expect(error.code).toBe('StaleState');
      expect((await store.load('s1'))!.transcript).toEqual([...exchange(0), ...exchange(1)]);
    });
  });

  describe('a process killed in the middle of a checkpoint', () => {
    it('leaves the previous checkpoint whole and nothing of the interrupted one', async () => {
      const child = spawn(process.execPath, ['--no-warnings', '--loader', 'ts-node/esm', CRASH_CHILD, path], {
        cwd: PROJECT_ROOT,
        env: tsNodeEnv(),
        stdio: ['ignore', 'pipe', 'pipe'],
      });
      const exited = new Promise<NodeJS.Signals | null>((resolve) =>
        child.on('exit', (_code, signal) => resolve(signal)),
      );
      let stdout = '';
      let stderr = '';
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      await new Promise<void>((resolve, reject) => {
        child.stdout.on('data', (chunk: Buffer) => {
          stdout += chunk.toString();
          if (stdout.includes('mid-transaction\n')) resolve();
        });
        child.on('exit', (code) =>
          reject(new Error(`crash child exited (${code}) before pausing:\n${stdout}\n${stderr}`)),
        );
      });

      child.kill('SIGKILL');

      expect(await exited).toBe('SIGKILL');
      expect(stdout).toBe('first-committed\nmid-transaction\n');
      // The uncommitted pages did reach the disk: recovery has to discard them, not merely never see them.
      expect(statSync(`${path}-wal`).size).toBeGreaterThan(1_000_000);

      store = SqliteStore.open(path);
      const session = (await store.load('crash'))!;
      expect(session.revision).toBe(1);
      expect(session.state).toEqual({ 'memory.turns': 1 });
      expect(session.transcript).toEqual([
        { role: 'user', content: 'first question' },
        { role: 'assistant', content: 'first answer' },
      ]);
      expect(session.turns.map((t) => [t.index, t.status])).toEqual([[0, 'completed']]);
      expect(session.suspension).toBeNull();
      expect(await store.list()).toEqual([
        { id: 'crash', agent: 'support', turns: 1, updatedAt: session.updatedAt, suspended: false },
      ]);
      // The dead writer left no lock behind: the next turn commits normally.
      await expect(store.checkpoint(checkpointOf('crash', 1, 1))).resolves.toBe(2);
    });
  });
});

describe('SqliteStore: large part bytes by reference', () => {
  it('keeps bytes over PART_INLINE_BYTES out of the transcript row, in part_blobs, once per session', async () => {
    const { PART_INLINE_BYTES } = await import('../../../src/engine/stores/part-blobs.js');
    const path = join(tempDir(), 'blobs.db');
    const store = SqliteStore.open(path);
    const large = Buffer.alloc(PART_INLINE_BYTES + 1, 7).toString('base64');
    const small = Buffer.alloc(100, 9).toString('base64');
    const user = {
      role: 'user' as const,
      content: '',
      parts: [
        { type: 'image' as const, data: large, mediaType: 'image/png' },
        { type: 'image' as const, data: small, mediaType: 'image/png' },
      ],
    };
    await store.checkpoint(checkpointOf('b1', 0, 0, { append: [user, user] }));
    await store.close();
    const db = new Database(path, { readonly: true });
    const row = db.prepare('SELECT messages FROM checkpoints WHERE session_id = ?').get('b1') as { messages: string };
    expect(row.messages).not.toContain(large);
    expect(row.messages).toContain(small);
    expect(row.messages).toContain('"blob":"sha256-');
    expect(db.prepare('SELECT COUNT(*) FROM part_blobs WHERE session_id = ?').pluck().get('b1')).toBe(1);
    // A blob removed by hand is a corrupt store, said so, not a transcript with a hole.
    db.close();
    const writable = new Database(path);
    writable.prepare('DELETE FROM part_blobs').run();
    writable.close();
    const reopened = SqliteStore.open(path);
    await expect(reopened.load('b1')).rejects.toMatchObject({
      code: 'StoreCorrupt',
      message: expect.stringContaining('part_blobs'),
    });
    await reopened.close();
  });
});
