import 'reflect-metadata';
import { closeSync, mkdirSync, mkdtempSync, openSync, realpathSync, rmSync, statSync, writeSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import Database from 'better-sqlite3';
import type { CliIo } from '../../../src/hosts/cli/cli-io.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { SqliteStore } from '../../../index.js';
import type { SessionCheckpoint } from '../../../stores.js';

interface FakeIo extends CliIo {
  readonly stdout: string[];
  readonly stderr: string[];
}

let cwd: string;
let dbPath: string;

beforeEach(() => {
  cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-doctor-')));
  dbPath = join(cwd, '.trellis', 'trellis.db');
});

afterEach(() => rmSync(cwd, { recursive: true, force: true }));

function fakeIo(): FakeIo {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    write: (t) => void stdout.push(t),
    out: (l = '') => void stdout.push(`${l}\n`),
    err: (l) => void stderr.push(l),
    stdin: Readable.from(['']),
    cwd,
    env: {},
    exitCode: 0,
  };
}

async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
  const io = fakeIo();
  const code = await runCli(['node', 'trellis', ...args], io);
  return { code, out: io.stdout.join(''), err: io.stderr.join('\n') };
}

async function seed(ids: string[], filler = 'hello'): Promise<void> {
  const store = SqliteStore.open(dbPath);
  for (const id of ids) {
    await store.checkpoint({
      sessionId: id,
      agent: 'a',
      expectedRevision: 0,
      state: {},
      suspension: null,
      append: [{ role: 'user', content: filler }],
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
    } as unknown as SessionCheckpoint);
  }
  await store.close();
}

function breakRow(id: string): void {
  const db = new Database(dbPath);
  db.prepare("UPDATE sessions SET state = '{oops' WHERE id = ?").run(id);
  db.close();
}

describe('an unreadable session has a way out', () => {
  it('sessions show names the session and the delete command; delete removes it; doctor is clean again', async () => {
    await seed(['good', 'broken']);
    breakRow('broken');

    const shown = await cli('sessions', 'show', 'broken');
    expect(shown.code).toBe(1);
    expect(shown.err).toContain('Stored session "broken" cannot be read');
    expect(shown.err).toContain('trellis sessions delete broken');

    const sick = await cli('doctor');
    expect(sick.code).toBe(1);
    expect(sick.out).toContain('ok      integrity: integrity check passed');
    expect(sick.out).toMatch(/ok {6}schema: schema version \d+ \(current\)/);
    expect(sick.out).toContain('PROBLEM session: 1 of 2 stored session(s) read back');
    expect(sick.out).toContain('fix: trellis sessions delete broken');

    const deleted = await cli('sessions', 'delete', 'broken');
    expect(deleted).toMatchObject({ code: 0, out: 'Deleted session broken.\n' });
    expect((await cli('sessions', 'delete', 'broken')).code).toBe(1);

    const healthy = await cli('doctor');
    expect(healthy.code).toBe(0);
    expect(healthy.out).toContain('1 of 1 stored session(s) read back');
    expect(healthy.out).toContain('No problems found.');
    expect((await cli('sessions', 'show', 'good')).code).toBe(0);
  });
});

describe('trellis doctor', () => {
  it('reports a damaged file from SQLite integrity_check', async () => {
    await seed(
      Array.from({ length: 60 }, (_, i) => `s${i}`),
      'x'.repeat(3_000),
    );
    const db = new Database(dbPath);
    db.pragma('wal_checkpoint(TRUNCATE)');
    db.close();
    // Scribble over a page in the middle of the file (not the header).
    const size = statSync(dbPath).size;
    const fd = openSync(dbPath, 'r+');
    writeSync(fd, Buffer.alloc(4096, 0x41), 0, 4096, Math.floor(size / 2 / 4096) * 4096);
    closeSync(fd);

    const result = await cli('doctor');
    expect(result.code).toBe(1);
    // Depending on which page the scribble hits, SQLite lists the damage or refuses to run the check at all.
    expect(result.out).toMatch(
      /PROBLEM integrity: integrity check (failed|could not run): .*malformed|PROBLEM integrity: integrity check failed/,
    );
  });

  it('reports a file that is not a Trellis store', async () => {
    const store = new Database(join(cwd, 'other.db'));
    store.exec('CREATE TABLE t (x)');
    store.close();
    rmSync(join(cwd, '.trellis'), { recursive: true, force: true });
    const { mkdirSync, copyFileSync } = await import('node:fs');
    mkdirSync(join(cwd, '.trellis'));
    copyFileSync(join(cwd, 'other.db'), dbPath);
    const result = await cli('doctor');
    expect(result.code).toBe(1);
    expect(result.out).toContain('PROBLEM schema: this is not a Trellis session store');
  });

  it('after an upgrade of Trellis: doctor leaves an older file alone, sessions list migrates it and lists its sessions', async () => {
    const { applyMigrations, SQLITE_MIGRATIONS, schemaVersion } =
      await import('../../../src/engine/stores/sqlite-migrations.js');
    mkdirSync(join(cwd, '.trellis'));
    const old = new Database(dbPath);
    applyMigrations(old, SQLITE_MIGRATIONS.slice(0, 3));
    old.exec(`INSERT INTO sessions VALUES ('old-one', 'desk', 1, '{}', 'null', '2025-01-01T00:00:00.000Z', '2025-01-01T00:00:00.000Z');
              INSERT INTO messages VALUES ('old-one', 0, '{"role":"user","content":"hello"}');`);
    old.close();
    const version = () => {
      const db = new Database(dbPath, { readonly: true });
      const v = schemaVersion(db);
      db.close();
      return v;
    };

    const checked = await cli('doctor');
    expect(checked.code).toBe(0);
    expect(checked.out).toContain('schema version 3; it is migrated to');
    expect(checked.out).toContain('read back once the file is migrated');
    expect(version()).toBe(3);

    const listed = await cli('sessions', 'list');
    expect(listed.code).toBe(0);
    expect(listed.out).toContain('old-one  desk  0 turns');
    expect(version()).toBe(SQLITE_MIGRATIONS.length);
    expect((await cli('sessions', 'show', 'old-one')).out).toContain('hello');
    expect((await cli('doctor')).out).toContain('1 of 1 stored session(s) read back');
  });

  it('is content when there is no store yet', async () => {
    const result = await cli('doctor');
    expect(result).toMatchObject({ code: 0 });
    expect(result.out).toContain('no store file');
  });
});

describe('leases an operator clears (issue 34)', () => {
  const DAY = 86_400_000;

  function lease(sessionId: string, holder: string, expiresAt: number, ttlMs: number): void {
    const db = new Database(dbPath);
    db.prepare('INSERT INTO session_leases (session_id, holder, expires_at, ttl_ms) VALUES (?, ?, ?, ?)').run(
      sessionId,
      holder,
      expiresAt,
      ttlMs,
    );
    db.close();
  }

  function leaseRows(): { session_id: string; holder: string }[] {
    const db = new Database(dbPath, { readonly: true });
    try {
      return db.prepare('SELECT session_id, holder FROM session_leases ORDER BY session_id').all() as {
        session_id: string;
        holder: string;
      }[];
    } finally {
      db.close();
    }
  }

  /** The pid of a process that ran and is gone. */
  async function deadPid(): Promise<number> {
    const { spawn } = await import('node:child_process');
    const child = spawn(process.execPath, ['-e', '']);
    await new Promise((resolve) => child.on('exit', resolve));
    return child.pid!;
  }

  it("sessions delete clears the session's lease with it, whoever holds it; an id with only a lease has it cleared", async () => {
    await seed(['s1']);
    lease('s1', 'a-host-a-day-ahead:7:x', Date.now() + DAY, 10_000);
    lease('only-leased', 'crashed-first-turn', Date.now() + 9_000, 10_000);

    const deleted = await cli('sessions', 'delete', 's1');
    expect(deleted.code).toBe(0);
    expect(deleted.out).toBe('Deleted session s1.\nCleared its lease (held by a-host-a-day-ahead:7:x, ahead).\n');
    const cleared = await cli('sessions', 'delete', 'only-leased');
    expect(cleared.code).toBe(0);
    expect(cleared.out).toContain('Cleared its lease (held by crashed-first-turn, until ');
    expect(cleared.out).toContain('a turn still running there cannot save');
    expect(leaseRows()).toEqual([]);
    expect((await cli('sessions', 'delete', 's1')).code).toBe(1);
  });

  it("doctor reports a lease from a clock ahead and one held for a process that is gone; --repair clears them and says so; a running process's lease stays", async () => {
    const { hostname } = await import('node:os');
    await seed(['s1']);
    const gone = `${hostname()}:${await deadPid()}:0b0e6f6c-8d5e-4c57-9d0f-3f2a4bce9a10`;
    const running = `${hostname()}:${process.pid}:6a4c3b43-2f1c-4a55-8d0e-0d5b9a2c7e11`;
    lease('ahead', 'elsewhere', Date.now() + DAY, 10_000);
    lease('orphan', gone, Date.now() + 3_600_000, 3_600_000);
    lease('old', 'whoever', Date.now() - 60_000, 10_000);
    lease('busy', running, Date.now() + 3_600_000, 3_600_000);

    const sick = await cli('doctor');
    expect(sick.code).toBe(1);
    expect(sick.out).toContain('PROBLEM lease: the lease of session ahead expires at');
    expect(sick.out).toContain("written by a clock ahead of this machine's");
    expect(sick.out).toMatch(
      /PROBLEM lease: session orphan is leased until \S+ by process \d+ of this machine, which no longer runs/,
    );
    expect(sick.out).toContain('fix: trellis doctor --repair');
    expect(sick.out).toContain('ok      lease: 1 expired lease(s) left by turns that stopped');
    expect(sick.out).toContain('ok      lease: 1 session(s) leased by a running turn');
    expect(leaseRows()).toHaveLength(4);

    const repaired = await cli('doctor', '--repair');
    expect(repaired.code).toBe(0);
    expect(repaired.out.match(/^REPAIRED cleared a lease: /gm)).toHaveLength(3);
    expect(repaired.out).toContain('No problems found.');
    expect(leaseRows()).toEqual([{ session_id: 'busy', holder: running }]);
    expect((await cli('doctor', '--repair')).out).toContain('Nothing to repair.');
  });
});
