import 'reflect-metadata';
import { spawn } from 'node:child_process';
import {
  chmodSync,
  closeSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  readSync,
  rmSync,
  statSync,
  truncateSync,
  writeFileSync,
  writeSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import { ScriptedModel, SqliteStore, Trellis, TrellisError } from '../../../index.js';
import { diagnoseSqliteStore, type DoctorReport } from '../../../stores.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';
import { PROJECT_ROOT, TS_NODE_ARGS, tsNodeEnv } from '../../support/ts-node-child.js';

/**
 * Issue 33, item 6: damaged, future-version, full and read-only SQLite stores. Every door a user
 * goes through — opening the store, a turn on the damaged session, on another session and on a
 * new one, `trellis sessions list`, `trellis doctor` — answers within a deadline with a result
 * or a typed `TrellisError` that has a hint (never a raw driver error, never a hang), and each
 * case has a way out that leaves the session usable: `trellis doctor --repair`, `sessions
 * delete`, or what the error says (restore a backup, fix permissions, free space, upgrade).
 */
const TESTING = fileURLToPath(new URL('../../../testing.ts', import.meta.url));
const FULL_DISK_CHILD = fileURLToPath(new URL('./support/full-disk-child.ts', import.meta.url));
/** Far beyond SQLite's 5 s busy wait: a door that has not answered by then hangs. */
const DOOR_DEADLINE_MS = 15_000;
const SESSIONS = ['s1', 's2', 's3'];

/** A door's answer: `ok`, a TrellisError's code, or what went wrong with the door itself. */
type Outcome = string;

let dir: string;
let path: string;
beforeEach(async () => {
  dir = mkdtempSync(join(tmpdir(), 'trellis-damaged-'));
  chmodSync(dir, 0o777);
  path = join(dir, 'trellis.db');
  writeFileSync(
    join(dir, 'trellis.config.mjs'),
    `import { ScriptedModel } from '${TESTING}';\nexport default { agent: { name: 'a' }, store: 'trellis.db', model: new ScriptedModel(() => 'fine') };`,
  );
  const store = SqliteStore.open(path);
  const app = Trellis.create({ store });
  const agent = app.agent({ name: 'a', model: new ScriptedModel(() => 'hello'), instructions: '' });
  for (const id of SESSIONS) await agent.session(id).send(`first message of ${id} ${'x'.repeat(3_000)}`);
  await app.stop();
  await store.close();
  sql('PRAGMA wal_checkpoint(TRUNCATE)');
});
afterEach(() => {
  chmodSync(dir, 0o777);
  rmSync(dir, { recursive: true, force: true });
});

function sql(statements: string): void {
  const db = new Database(path);
  try {
    db.exec(statements);
  } finally {
    db.close();
  }
}

function scribble(offset: number, bytes: Buffer): void {
  const fd = openSync(path, 'r+');
  writeSync(fd, bytes, 0, bytes.length, offset);
  closeSync(fd);
}

/** Runs `work` as an unprivileged user when the tests run as root (whom file modes do not stop). Synchronous, so nothing else runs meanwhile. */
function unprivileged<T>(work: () => T): T {
  if (process.getuid?.() !== 0) return work();
  process.seteuid!(65534);
  try {
    return work();
  } finally {
    process.seteuid!(0);
  }
}

async function outcome(work: () => unknown): Promise<Outcome> {
  let timer: NodeJS.Timeout | undefined;
  try {
    const answered = await Promise.race([
      Promise.resolve()
        .then(work)
        .then(() => 'ok'),
      new Promise<string>((resolve) => (timer = setTimeout(() => resolve('hung'), DOOR_DEADLINE_MS))),
    ]);
    return answered;
  } catch (error) {
    if (!TrellisError.is(error)) return `raw ${(error as Error)?.name}: ${(error as Error)?.message}`;
    if (!error.hint) return `${error.code} without a hint`;
    return error.code;
  } finally {
    clearTimeout(timer);
  }
}

/** The doors of a store that opens: a turn on each of `ids`, by a fresh app on a fresh handle. */
async function turns(ids: readonly string[], maxPages?: number): Promise<Record<string, Outcome>> {
  let store: SqliteStore | undefined;
  const opened = await outcome(() => (store = SqliteStore.open(path)));
  if (opened !== 'ok') return { open: opened };
  if (maxPages !== undefined) (store as unknown as { db: Database.Database }).db.pragma(`max_page_count = ${maxPages}`);
  const app = Trellis.create({ store: store! });
  const agent = app.agent({
    name: 'a',
    model: new ScriptedModel(() => 'y'.repeat(maxPages === undefined ? 10 : 400_000)),
    instructions: '',
  });
  const answers: Record<string, Outcome> = { open: opened };
  for (const id of ids) answers[id] = await outcome(() => agent.session(id).send('again'));
  await app.stop();
  await store!.close();
  return answers;
}

async function cli(...args: string[]): Promise<{ code: number | string; out: string; err: string }> {
  const io = fakeCliIo(dir);
  let code: number | string = 'hung';
  await outcome(async () => (code = await runCli(['node', 'trellis', ...args], io)));
  return { code, out: io.text(), err: io.stderr.join('\n') };
}

function problems(report: DoctorReport): string[] {
  return report.findings.filter((f) => !f.ok).map((f) => `${f.check}: ${f.detail} → ${f.fix ?? ''}`);
}

/** The way out most cases take: `trellis doctor --repair`, then a clean doctor and every session (the damaged one too) usable. */
async function repairs(expected: RegExp): Promise<void> {
  const repaired = await cli('doctor', '--repair');
  expect(repaired.out).toMatch(expected);
  expect(repaired.code).toBe(0);
  expect(problems(await diagnoseSqliteStore(path))).toEqual([]);
  expect(await turns([...SESSIONS, 'new'])).toEqual({ open: 'ok', s1: 'ok', s2: 'ok', s3: 'ok', new: 'ok' });
}

describe('a damaged SQLite store: typed errors, no hang, a way out (issue 33, item 6)', () => {
  describe('the file', () => {
    it.each([
      ['truncated to half its size', () => truncateSync(path, Math.floor(statSync(path).size / 2))],
      ['truncated inside its header (100 bytes)', () => truncateSync(path, 100)],
      ['with a garbage header', () => scribble(0, Buffer.from('garbage garbage!'))],
      [
        'replaced by a text file',
        () => writeFileSync(path, 'these are not the pages you are looking for\n'.repeat(200)),
      ],
    ])(
      '%s: StoreCorrupt at every door; doctor says restore a backup; --repair refuses to guess',
      async (_name, damage) => {
        damage();
        expect(await turns(SESSIONS)).toEqual({ open: 'StoreCorrupt' });
        const listed = await cli('sessions', 'list');
        expect(listed.code).toBe(1);
        expect(listed.err).toContain('trellis doctor');
        const report = await diagnoseSqliteStore(path);
        expect(problems(report).join('\n')).toMatch(/Restore the file from a backup/);
        const repaired = await cli('doctor', '--repair');
        expect(repaired.code).toBe(1);
        expect(repaired.out).toContain('not repaired:');
        // The way out the doctor names: move the file away (or restore one), and the store starts empty.
        rmSync(path);
        expect(await turns(['s1'])).toEqual({ open: 'ok', s1: 'ok' });
      },
    );

    it('a damaged index (its entry for s1 changed, the rows intact): s1 no longer loads; the doctor reports the integrity check; --repair rebuilds the indexes and every session reads', async () => {
      const db = new Database(path);
      const { rootpage } = db
        .prepare(`SELECT rootpage FROM sqlite_master WHERE name = 'checkpoints_by_session'`)
        .get() as { rootpage: number };
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.close();
      const page = Buffer.alloc(pageSize);
      const fd = openSync(path, 'r');
      readSync(fd, page, 0, pageSize, (rootpage - 1) * pageSize);
      closeSync(fd);
      const at = page.indexOf('s1');
      expect(at).toBeGreaterThan(0);
      scribble((rootpage - 1) * pageSize + at + 1, Buffer.from('0'));

      expect(await turns(SESSIONS)).toEqual({ open: 'ok', s1: 'InvalidCheckpoint', s2: 'ok', s3: 'ok' });
      expect(problems(await diagnoseSqliteStore(path))).toEqual([
        expect.stringMatching(
          /integrity: integrity check failed: .*missing from index checkpoints_by_session → trellis doctor --repair/,
        ),
      ]);
      await repairs(/REPAIRED rebuilt the indexes and the file \(REINDEX, VACUUM\)/);
    });

    it('a zeroed index page: --repair cannot rebuild it and says restore a backup', async () => {
      const db = new Database(path);
      const { rootpage } = db
        .prepare(`SELECT rootpage FROM sqlite_master WHERE name = 'checkpoints_by_session'`)
        .get() as { rootpage: number };
      const pageSize = db.pragma('page_size', { simple: true }) as number;
      db.close();
      scribble((rootpage - 1) * pageSize, Buffer.alloc(pageSize, 0));
      expect(Object.values(await turns(SESSIONS))).toContain('StoreCorrupt');
      const repaired = await cli('doctor', '--repair');
      expect(repaired.code).toBe(1);
      expect(repaired.out).toMatch(/not repaired: .*restore the file from a backup/);
    });

    it('a folder at its path: StoreIO naming the path', async () => {
      rmSync(path);
      mkdirSync(path);
      expect(await turns(SESSIONS)).toEqual({ open: 'StoreIO' });
      expect((await cli('sessions', 'list')).code).toBe(1);
    });

    it('a path whose folder is a file: StoreIO (was a raw EEXIST from mkdir)', async () => {
      writeFileSync(join(dir, 'not-a-folder'), 'x');
      expect(await outcome(() => SqliteStore.open(join(dir, 'not-a-folder', 'trellis.db')))).toBe('StoreIO');
    });

    it('written by a newer Trellis: UnsupportedSchema at every door, saying upgrade', async () => {
      sql(`INSERT INTO schema_migrations (version, name, applied_at) VALUES (99, 'from-the-future', '2030-01-01')`);
      expect(await turns(SESSIONS)).toEqual({ open: 'UnsupportedSchema' });
      expect((await cli('sessions', 'list')).err).toContain('Upgrade Trellis');
      expect(problems(await diagnoseSqliteStore(path))).toEqual([
        expect.stringMatching(/written by a newer Trellis .*→ Upgrade Trellis/),
      ]);
    });

    it('locked by another process for longer than the busy wait: StoreBusy (retryable), then usable once it lets go', async () => {
      const other = new Database(path);
      other.exec('BEGIN EXCLUSIVE');
      try {
        const started = Date.now();
        expect(await outcome(() => SqliteStore.open(path))).toBe('StoreBusy');
        expect(Date.now() - started).toBeLessThan(DOOR_DEADLINE_MS);
      } finally {
        other.exec('ROLLBACK');
        other.close();
      }
      expect(await turns(['s1'])).toEqual({ open: 'ok', s1: 'ok' });
    }, 30_000);
  });

  describe('permissions and space', () => {
    it('a read-only file: StoreReadonly when opened to write (before any turn runs), readable with readonly: true', async () => {
      chmodSync(path, 0o444);
      expect(await outcome(() => unprivileged(() => SqliteStore.open(path)))).toBe('StoreReadonly');
      const readable = unprivileged(() => new SqliteStore({ path, readonly: true }));
      expect((await readable.list()).map((s) => s.id).sort()).toEqual(SESSIONS);
      await readable.close();
      chmodSync(path, 0o644);
      expect(await turns(['s1'])).toEqual({ open: 'ok', s1: 'ok' });
    });

    it('a read-only folder: StoreReadonly, and the doctor says the folder needs write access even to read', async () => {
      chmodSync(path, 0o666);
      chmodSync(dir, 0o555);
      expect(await outcome(() => unprivileged(() => SqliteStore.open(path)))).toBe('StoreReadonly');
      expect(await outcome(() => unprivileged(() => new SqliteStore({ path, readonly: true })))).toBe('StoreReadonly');
      const report = await unprivileged(() => diagnoseSqliteStore(path));
      expect(problems(report).join('\n')).toContain('write access to');
      chmodSync(dir, 0o777);
      expect(await turns(['s1'])).toEqual({ open: 'ok', s1: 'ok' });
    });

    it('a full disk (the file capped with max_page_count): StoreFull on every turn that writes; nothing is stuck once there is room', async () => {
      const pages = (() => {
        const db = new Database(path);
        try {
          return db.pragma('page_count', { simple: true }) as number;
        } finally {
          db.close();
        }
      })();
      expect(await turns(['s1', 'new'], pages + 2)).toEqual({ open: 'ok', s1: 'StoreFull', new: 'StoreFull' });
      expect(problems(await diagnoseSqliteStore(path))).toEqual([]);
      expect(await turns(['s1', 'new'])).toEqual({ open: 'ok', s1: 'ok', new: 'ok' });
    });

    it('a file-size limit (ulimit -f, a real write error from the OS) in another process: a typed error there; the session goes on here', async () => {
      const blocks = Math.ceil(statSync(path).size / 1024) + 16;
      const child = spawn(
        'bash',
        ['-c', `ulimit -f ${blocks}; exec "$0" "$@"`, process.execPath, ...TS_NODE_ARGS, FULL_DISK_CHILD, path],
        { cwd: PROJECT_ROOT, env: tsNodeEnv(), stdio: ['ignore', 'pipe', 'pipe'] },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child.on('exit', resolve));
      expect({ code, stderr }).toMatchObject({ code: 0 });
      const answers = JSON.parse(stdout.trim().split('\n').at(-1)!) as Record<string, { code?: string; hint?: string }>;
      expect(['StoreIO', 'StoreFull']).toContain(answers['s1']!.code);
      expect(answers['s1']!.hint).toMatch(/disk|space/);
      expect(problems(await diagnoseSqliteStore(path))).toEqual([]);
      expect(await turns(['s1', 'new'])).toEqual({ open: 'ok', s1: 'ok', new: 'ok' });
    }, 120_000);
  });

  describe('rows', () => {
    it.each([
      ['sessions.state is not JSON', `UPDATE sessions SET state = '{oops' WHERE id = 's1'`],
      ['sessions.suspension is not JSON', `UPDATE sessions SET suspension = '{oops' WHERE id = 's1'`],
      ['sessions.revision is not a count', `UPDATE sessions SET revision = 'x' WHERE id = 's1'`],
      ['a transcript batch is not JSON', `UPDATE checkpoints SET messages = '[{oops' WHERE session_id = 's1'`],
      ['a turn record is not JSON', `UPDATE checkpoints SET record = '{oops' WHERE session_id = 's1'`],
      ['a step journal row is not JSON', `INSERT INTO turn_steps (session_id, steps) VALUES ('s1', '{oops')`],
    ])(
      '%s: InvalidCheckpoint for that session only; --repair moves it aside, keeping its rows, and its id starts afresh',
      async (_name, damage) => {
        sql(damage);
        expect(await turns(['s1', 's2', 'new'])).toEqual({ open: 'ok', s1: 'InvalidCheckpoint', s2: 'ok', new: 'ok' });
        const shown = await cli('sessions', 'show', 's1');
        expect(shown.err).toContain('trellis sessions delete s1');
        expect(problems(await diagnoseSqliteStore(path))).toEqual([
          expect.stringContaining('3 of 4 stored session(s) read back'),
          expect.stringMatching(
            /Stored session "s1" cannot be read.*→ trellis sessions delete s1, or trellis doctor --repair/,
          ),
        ]);
        await repairs(/REPAIRED moved session s1 aside into the quarantine table/);
        const db = new Database(path, { readonly: true });
        const kept = db.prepare('SELECT session_id, rows FROM quarantine').all() as {
          session_id: string;
          rows: string;
        }[];
        db.close();
        expect(kept.map((k) => k.session_id)).toEqual(['s1']);
        expect(kept[0]!.rows).toContain('first message of s1');
        expect((await cli('doctor')).out).toContain('1 unreadable session(s) moved aside');
      },
    );

    it('a lease row whose expiry is no time, and one from a clock a day ahead: they hold nothing; --repair clears them', async () => {
      sql(
        `INSERT INTO session_leases (session_id, holder, expires_at, ttl_ms) VALUES ('s1', 'x', 'never', 'x'), ('s2', 'y', ${Date.now() + 86_400_000}, 10000)`,
      );
      expect(await turns(['s1', 's2'])).toEqual({ open: 'ok', s1: 'ok', s2: 'ok' });
      sql(
        `INSERT INTO session_leases (session_id, holder, expires_at, ttl_ms) VALUES ('s1', 'x', 'never', 'x'), ('s2', 'y', ${Date.now() + 86_400_000}, 10000)`,
      );
      await repairs(/REPAIRED cleared a lease: .*s1.*\n.*REPAIRED cleared a lease: .*s2/);
    });
  });

  describe('the schema', () => {
    it.each(['turn_steps', 'session_leases', 'turn_events'])(
      'a missing %s table (it holds no session): StoreSchema at open; --repair recreates it empty',
      async (table) => {
        sql(`DROP TABLE ${table}`);
        expect(await turns(SESSIONS)).toEqual({ open: 'StoreSchema' });
        expect(problems(await diagnoseSqliteStore(path))).toEqual([
          expect.stringMatching(new RegExp(`table ${table} is missing.*→ trellis doctor --repair`)),
        ]);
        await repairs(new RegExp(`REPAIRED recreated the missing table\\(s\\) ${table} empty`));
      },
    );

    it('a missing checkpoints table (it held the sessions): StoreSchema; the doctor and --repair say restore a backup', async () => {
      sql('DROP TABLE checkpoints');
      expect(await turns(SESSIONS)).toEqual({ open: 'StoreSchema' });
      expect(problems(await diagnoseSqliteStore(path))).toEqual([
        expect.stringMatching(/table checkpoints is missing.*→ Restore the file from a backup/),
      ]);
      const repaired = await cli('doctor', '--repair');
      expect(repaired.code).toBe(1);
      expect(repaired.out).toMatch(/not repaired: .*restore the file from a backup/);
    });

    it('a missing column: StoreSchema; restore a backup', async () => {
      sql('ALTER TABLE sessions DROP COLUMN turn_count');
      expect(await turns(SESSIONS)).toEqual({ open: 'StoreSchema' });
      expect(problems(await diagnoseSqliteStore(path))).toEqual([
        expect.stringMatching(/column sessions.turn_count is missing.*→ Restore the file from a backup/),
      ]);
    });

    it('a lost schema ledger: StoreSchema (was StoreFailed "table sessions already exists"); --repair writes it again', async () => {
      sql('DROP TABLE schema_migrations');
      expect(await turns(SESSIONS)).toEqual({ open: 'StoreSchema' });
      expect(problems(await diagnoseSqliteStore(path))).toEqual([
        expect.stringMatching(/not its schema ledger.*→ trellis doctor --repair/),
      ]);
      await repairs(/REPAIRED wrote the schema ledger again/);
    });
  });
});
