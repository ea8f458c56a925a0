import 'reflect-metadata';
import { jest } from '@jest/globals';
import { spawn } from 'node:child_process';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { hostname, tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { CliIo } from '../../../src/hosts/cli/cli-io.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import type { PostgresStore } from '../../../src/engine/stores/postgres-store.js';
import type { SessionCheckpoint } from '../../../stores.js';
import { PostgresSchemas } from '../../support/postgres-schemas.js';
import { POSTGRES_URL, haveService } from '../../support/services.js';

const available = await haveService('postgres', 'PostgreSQL leases, sessions delete and trellis doctor');
const schemas = available ? new PostgresSchemas() : undefined;

const DAY_S = 86_400;

function checkpoint(sessionId: string): SessionCheckpoint {
  return {
    sessionId,
    agent: 'a',
    expectedRevision: 0,
    state: {},
    suspension: null,
    append: [
      { role: 'user', content: 'hello' },
      { role: 'assistant', content: 'hi' },
    ],
    turn: {
      index: 0,
      input: 'hello',
      status: 'completed',
      rounds: 1,
      toolCalls: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
      startedAt: '',
      finishedAt: '',
    },
  } as unknown as SessionCheckpoint;
}

/** The pid of a process that ran and is gone. */
async function deadPid(): Promise<number> {
  const child = spawn(process.execPath, ['-e', '']);
  await new Promise((resolve) => child.on('exit', resolve));
  return child.pid!;
}

(available ? describe : describe.skip)('PostgreSQL leases, sessions delete and trellis doctor (issue 34)', () => {
  let schema: string;
  let store: PostgresStore;

  /** A lease row written by hand: `expires` is SQL (by the server's clock), `ttl` null for a row from before the TTL was kept. */
  async function lease(sessionId: string, holder: string, expires: string, ttl: number | null): Promise<void> {
    await schemas!.admin.query(
      `INSERT INTO "${schema}".session_leases (session_id, holder, expires_at, ttl_ms) VALUES ($1, $2, ${expires}, $3)`,
      [sessionId, holder, ttl],
    );
  }

  async function leaseRows(): Promise<{ session_id: string; holder: string }[]> {
    return (await schemas!.admin.query(`SELECT session_id, holder FROM "${schema}".session_leases ORDER BY session_id`))
      .rows;
  }

  beforeEach(async () => {
    schema = schemas!.next();
    store = await schemas!.open(schema);
  });

  afterEach(async () => {
    await store.close();
    await schemas!.drop(schema);
  });

  afterAll(async () => {
    await schemas?.dropAll();
  });

  describe('leases judged by the database clock', () => {
    it("writes expiries by the server's clock, whatever this process's clock says", async () => {
      const now = Date.now();
      const spy = jest.spyOn(Date, 'now').mockReturnValue(now + DAY_S * 1000);
      try {
        await expect(store.acquireLease('s1', 'a', 30_000)).resolves.toBe(true);
      } finally {
        spy.mockRestore();
      }

      const { rows } = await schemas!.admin.query(
        `SELECT EXTRACT(EPOCH FROM expires_at - clock_timestamp()) AS left, ttl_ms FROM "${schema}".session_leases`,
      );
      expect(Number(rows[0].left)).toBeGreaterThan(20);
      expect(Number(rows[0].left)).toBeLessThanOrEqual(30);
      expect(rows[0].ttl_ms).toBe(30_000);
      expect((await store.listLeases()).map((l) => [l.sessionId, l.holder, l.state, l.ttlMs])).toEqual([
        ['s1', 'a', 'live', 30_000],
      ]);
    });

    it('takes a lease whose expiry lies further ahead than its TTL (a clock ahead wrote it), and an infinite one; a live one holds', async () => {
      await lease('day-ahead', 'old-holder', `clock_timestamp() + interval '1 day'`, 10_000);
      await lease('forever', 'old-holder', `'infinity'`, 10_000);
      await lease('hour', 'old-holder', `clock_timestamp() + interval '1 hour'`, 3_600_000);
      await lease('hour-and-more', 'old-holder', `clock_timestamp() + interval '61 minutes'`, 3_600_000);

      expect((await store.listLeases()).map((l) => [l.sessionId, l.state, l.expiresAt === undefined])).toEqual([
        ['day-ahead', 'ahead', false],
        ['forever', 'ahead', true],
        ['hour', 'live', false],
        ['hour-and-more', 'ahead', false],
      ]);
      await expect(store.acquireLease('day-ahead', 'b', 30_000)).resolves.toBe(true);
      await expect(store.acquireLease('forever', 'b', 30_000)).resolves.toBe(true);
      await expect(store.acquireLease('hour', 'b', 30_000)).resolves.toBe(false);
      await expect(store.acquireLease('hour-and-more', 'b', 30_000)).resolves.toBe(true);
      // The queue worker's statement judges alike.
      await lease('queued', 'old-holder', `clock_timestamp() + interval '1 day'`, 10_000);
      await expect(store.acquireLeaseReadingRevision('queued', 'b', 30_000, 'queued')).resolves.toBe(0);
      // Taken over: the old holder can neither renew nor write under it.
      await expect(store.renewLease('day-ahead', 'old-holder', 10_000)).resolves.toBe(false);
      await expect(store.checkpoint({ ...checkpoint('day-ahead'), fence: 'old-holder' })).rejects.toMatchObject({
        code: 'LeaseLost',
      });
      await expect(store.checkpoint({ ...checkpoint('day-ahead'), fence: 'b' })).resolves.toBe(1);
    });

    it('bounds a row written before the TTL was kept by the longest lease a store grants', async () => {
      await lease('old-day', 'x', `clock_timestamp() + interval '23 hours'`, null);
      await lease('old-days', 'x', `clock_timestamp() + interval '2 days'`, null);

      expect((await store.listLeases()).map((l) => [l.sessionId, l.state, l.ttlMs])).toEqual([
        ['old-day', 'live', 86_400_000],
        ['old-days', 'ahead', 86_400_000],
      ]);
      await expect(store.acquireLease('old-day', 'b', 30_000)).resolves.toBe(false);
      await expect(store.acquireLease('old-days', 'b', 30_000)).resolves.toBe(true);
    });

    it('clearLease deletes a lease whoever holds it, or only while the named holder has it', async () => {
      await store.acquireLease('s1', 'a', 30_000);
      await store.acquireLease('s2', 'a', 30_000);

      await expect(store.clearLease('s1', 'b')).resolves.toBeUndefined();
      await expect(store.clearLease('s1', 'a')).resolves.toMatchObject({
        sessionId: 's1',
        holder: 'a',
        state: 'live',
        ttlMs: 30_000,
      });
      await expect(store.clearLease('s2')).resolves.toMatchObject({ sessionId: 's2', holder: 'a' });
      await expect(store.clearLease('s2')).resolves.toBeUndefined();
      expect(await leaseRows()).toEqual([]);
    });

    it("delete clears the session's lease in the same statement, and the lease of an id with no session", async () => {
      await store.checkpoint(checkpoint('s1'));
      await lease('s1', 'a-day-ahead', `clock_timestamp() + interval '1 day'`, 10_000);
      await lease('only-leased', 'crashed-first-turn', `clock_timestamp() + interval '9 seconds'`, 10_000);

      await expect(store.delete('s1')).resolves.toBe(true);
      await expect(store.delete('only-leased')).resolves.toBe(false);

      expect(await leaseRows()).toEqual([]);
      await expect(store.load('s1')).resolves.toBeUndefined();
    });
  });

  describe('the CLI on a PostgreSQL store', () => {
    let cwd: string;

    beforeEach(() => {
      cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-pg-doctor-')));
      writeFileSync(join(cwd, 'trellis.config.json'), JSON.stringify({ store: POSTGRES_URL, storeSchema: schema }));
    });

    afterEach(() => rmSync(cwd, { recursive: true, force: true }));

    async function cli(...args: string[]): Promise<{ code: number; out: string; err: string }> {
      const stdout: string[] = [];
      const stderr: string[] = [];
      const io: CliIo = {
        write: (t) => void stdout.push(t),
        out: (l = '') => void stdout.push(`${l}\n`),
        err: (l) => void stderr.push(l),
        stdin: Readable.from(['']),
        cwd,
        env: {},
        exitCode: 0,
      };
      const code = await runCli(['node', 'trellis', ...args], io);
      return { code, out: stdout.join(''), err: stderr.join('\n') };
    }

    it("sessions delete clears the session's lease with it, whoever holds it; an id with only a lease has it cleared", async () => {
      await store.checkpoint(checkpoint('s1'));
      await lease('s1', 'a-host-a-day-ahead:7:x', `clock_timestamp() + interval '1 day'`, 10_000);
      await lease('only-leased', 'crashed-first-turn', `clock_timestamp() + interval '9 seconds'`, 10_000);

      const deleted = await cli('sessions', 'delete', 's1');
      expect(deleted).toMatchObject({
        code: 0,
        out: 'Deleted session s1.\nCleared its lease (held by a-host-a-day-ahead:7:x, ahead).\n',
      });
      const cleared = await cli('sessions', 'delete', 'only-leased');
      expect(cleared.code).toBe(0);
      expect(cleared.out).toContain('Cleared its lease (held by crashed-first-turn, until ');
      expect(await leaseRows()).toEqual([]);
      const again = await cli('sessions', 'delete', 's1');
      expect(again.code).toBe(1);
      expect(again.err).toContain("No session 's1' in postgres://");
    });

    it("doctor reports leases by the server's clock; --repair clears the stale ones and says so; a running process's lease stays", async () => {
      await store.checkpoint(checkpoint('s1'));
      const gone = `${hostname()}:${await deadPid()}:0b0e6f6c-8d5e-4c57-9d0f-3f2a4bce9a10`;
      const running = `${hostname()}:${process.pid}:6a4c3b43-2f1c-4a55-8d0e-0d5b9a2c7e11`;
      await lease('ahead', 'elsewhere', `clock_timestamp() + interval '1 day'`, 10_000);
      await lease('orphan', gone, `clock_timestamp() + interval '1 hour'`, 3_600_000);
      await lease('old', 'whoever', `clock_timestamp() - interval '1 minute'`, 10_000);
      await lease('busy', running, `clock_timestamp() + interval '1 hour'`, 3_600_000);

      const sick = await cli('doctor');
      expect(sick.code).toBe(1);
      expect(sick.out).toMatch(/^ok {6}server: postgres:\/\/\S+ answers \(PostgreSQL [\d.]+.*\); its clock /m);
      expect(sick.out).toContain(`ok      schema: schema "${schema}" at version 8 (current)`);
      expect(sick.out).toContain('ok      session: 1 of 1 stored session(s) read back');
      expect(sick.out).toContain('PROBLEM lease: the lease of session ahead expires at');
      expect(sick.out).toContain("written by a clock ahead of the database server's clock as it reads now");
      expect(sick.out).toMatch(
        /PROBLEM lease: session orphan is leased until \S+ by process \d+ of this machine, which no longer runs/,
      );
      expect(sick.out).toContain('ok      lease: 1 expired lease(s) left by turns that stopped');
      expect(sick.out).toContain('ok      lease: 1 session(s) leased by a running turn');
      expect(await leaseRows()).toHaveLength(4);

      const repaired = await cli('doctor', '--repair');
      expect(repaired.code).toBe(0);
      expect(repaired.out.match(/^REPAIRED cleared a lease: /gm)).toHaveLength(3);
      expect(repaired.out).toContain('No problems found.');
      expect(await leaseRows()).toEqual([{ session_id: 'busy', holder: running }]);
      expect((await cli('doctor', '--repair')).out).toMatch(/^Nothing to repair\./);
    });

    it('doctor names an unreadable session with the delete command; sessions delete removes it and doctor is clean', async () => {
      await store.checkpoint(checkpoint('good'));
      await store.checkpoint(checkpoint('broken'));
      await schemas!.admin.query(
        `UPDATE "${schema}".messages SET message = '42' WHERE session_id = 'broken' AND seq = 1`,
      );

      const sick = await cli('doctor');
      expect(sick.code).toBe(1);
      expect(sick.out).toContain('PROBLEM session: 1 of 2 stored session(s) read back');
      expect(sick.out).toContain('fix: trellis sessions delete broken');

      expect(await cli('sessions', 'delete', 'broken')).toMatchObject({ code: 0, out: 'Deleted session broken.\n' });
      const healthy = await cli('doctor');
      expect(healthy.code).toBe(0);
      expect(healthy.out).toContain('ok      session: 1 of 1 stored session(s) read back');
    });

    it('doctor reports an older schema without migrating it; --repair migrates it', async () => {
      await store.close();
      await schemas!.admin.query(
        `DELETE FROM "${schema}".schema_migrations WHERE version = 8; ALTER TABLE "${schema}".session_leases DROP COLUMN ttl_ms`,
      );

      const older = await cli('doctor');
      expect(older.code).toBe(0);
      expect(older.out).toContain(
        'ok      schema: schema version 7; it is migrated to 8 the next time a store opens it',
      );
      expect(
        (await schemas!.admin.query(`SELECT MAX(version) AS v FROM "${schema}".schema_migrations`)).rows[0].v,
      ).toBe(7);

      const repaired = await cli('doctor', '--repair');
      expect(repaired.code).toBe(0);
      expect(repaired.out).toContain(`REPAIRED migrated schema "${schema}" from version 7 to 8`);
      expect(repaired.out).toContain('at version 8 (current)');
      store = await schemas!.open(schema);
    });

    it("doctor reports a schema of a newer Trellis, a dropped table, a schema that is not Trellis's, and no schema yet", async () => {
      await schemas!.admin.query(`INSERT INTO "${schema}".schema_migrations (version, name) VALUES (9, 'future')`);
      const newer = await cli('doctor');
      expect(newer.code).toBe(1);
      expect(newer.out).toContain(
        'PROBLEM schema: schema version 9 was written by a newer Trellis (this one knows up to 8)',
      );

      await schemas!.admin.query(
        `DELETE FROM "${schema}".schema_migrations WHERE version = 9; DROP TABLE "${schema}".turn_steps`,
      );
      const dropped = await cli('doctor');
      expect(dropped.code).toBe(1);
      expect(dropped.out).toContain('table(s) turn_steps are missing');

      await schemas!.admin.query(`DROP TABLE "${schema}".schema_migrations`);
      const foreign = await cli('doctor');
      expect(foreign.code).toBe(1);
      expect(foreign.out).toContain('has no Trellis schema ledger');

      writeFileSync(
        join(cwd, 'trellis.config.json'),
        JSON.stringify({ store: POSTGRES_URL, storeSchema: `${schema}_none` }),
      );
      const none = await cli('doctor');
      expect(none.code).toBe(0);
      expect(none.out).toContain(`ok      schema: no schema "${schema}_none" yet`);
    });

    it('doctor says an unreachable server is a problem, without the password', async () => {
      writeFileSync(
        join(cwd, 'trellis.config.json'),
        JSON.stringify({ store: 'postgres://trellis:s3cret-pw@127.0.0.1:1/test', storeSchema: schema }),
      );

      const down = await cli('doctor');

      expect(down.code).toBe(1);
      expect(down.out).toMatch(/^PROBLEM server: .*not reachable/m);
      expect(down.out).not.toContain('s3cret-pw');
    });
  });
});
