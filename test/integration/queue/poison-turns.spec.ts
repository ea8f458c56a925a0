import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import type { CliIo } from '../../../src/hosts/cli/cli-io.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { haveService, POSTGRES_URL, REDIS_URL } from '../../support/services.js';
import { WorkerProcesses, type WorkerProcess } from '../../support/worker-processes.js';
import { TrellisWorker, TurnQueue } from '../../../queue.js';
import { MemoryStore, TrellisError } from '../../../index.js';

const available =
  (await haveService('postgres', 'poison-turn queue test')) && (await haveService('redis', 'poison-turn queue test'));

/** Short leases and job locks, so each death costs the test about 2 s instead of 10. */
const FAST = { SCALE_LEASE_TTL_MS: '2000', SCALE_LOCK_MS: '1000', SCALE_CONCURRENCY: '2' };

/** `trellis <args>` run in process, in a project whose config names the workers' store and queue. */
async function trellis(cwd: string, ...args: string[]): Promise<{ code: number; out: string; err: string }> {
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

(available ? describe : describe.skip)(
  'poison turns: a turn that kills every worker that runs it is parked, not run forever',
  () => {
    const workers = new WorkerProcesses();
    let queue: TurnQueue;

    beforeAll(async () => {
      await workers.setUp();
      queue = new TurnQueue({ url: REDIS_URL, prefix: workers.prefix, queueName: 'turns', pollMs: 500 });
    }, 120_000);

    afterAll(async () => {
      await queue?.close();
      await workers.stop();
    });

    it('parks the turn after 3 crashes (the default) with PoisonTurn for its caller, frees its session, lists it, and an operator retries it once fixed', async () => {
      // An orchestrator replaces every worker that dies; these workers SIGKILL themselves inside a `crash:` call.
      let serving = true;
      const deaths: string[] = [];
      let generation = 0;
      let current: WorkerProcess | undefined;
      const replaceOnDeath = (worker: WorkerProcess) =>
        void (current = worker).exited.then((code) => {
          if (code !== null) return;
          deaths.push(worker.id);
          if (serving)
            void workers
              .start(`poisoned-${generation++}`, { ...FAST, SCALE_POISON: '1' })
              .then(replaceOnDeath, () => undefined);
        });
      replaceOnDeath(await workers.start(`poisoned-${generation++}`, { ...FAST, SCALE_POISON: '1' }));

      const started = Date.now();
      const failed = await queue
        .send({ agent: 'ledger-keeper', sessionId: 'p1', key: 't0', message: 'crash:p1-t0' })
        .catch((error: unknown) => error);
      const waited = Date.now() - started;
      expect(TrellisError.is(failed, 'PoisonTurn')).toBe(true);
      expect((failed as TrellisError).message).toMatch(/cut off 3 times/);
      // The side effect ran once per attempt, 3 times, each under the turn's one idempotency key.
      const runs = await workers.runsOf('crash:p1-t0');
      expect(runs).toHaveLength(3);
      expect(new Set(runs.map((r) => r.key))).toEqual(new Set(['p1:0:1:0']));
      expect(deaths).toHaveLength(3);
      process.stdout.write(
        `poison: parked after ${deaths.length} worker deaths, the caller's wait ended after ${(waited / 1000).toFixed(1)} s\n`,
      );

      // An operator sees it.
      const parked = await queue.parkedTurns();
      expect(parked).toEqual([
        expect.objectContaining({
          jobId: 'send.p1.t0',
          kind: 'send',
          agent: 'ledger-keeper',
          sessionId: 'p1',
          crashes: 3,
          reason: (failed as TrellisError).message,
        }),
      ]);

      // The session is not left busy: its next turn runs at once (a busy session would refuse it), and the parked turn stays parked.
      const next = await queue.send({
        agent: 'ledger-keeper',
        sessionId: 'p1',
        key: 't1',
        message: 'p1-t1',
        doubleTexting: 'reject',
      });
      expect(next.result).toMatchObject({ status: 'completed', reply: 'done: recorded p1-t1' });
      expect(await workers.runsOf('crash:p1-t0')).toHaveLength(3);
      expect(deaths).toHaveLength(3);

      // The operator's command line shows it too.
      const cwd = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-poison-')));
      try {
        writeFileSync(
          join(cwd, 'trellis.config.mjs'),
          `export default { agent: { name: 'ledger-keeper' }, store: ${JSON.stringify(POSTGRES_URL)}, storeSchema: ${JSON.stringify(workers.schema)}, queue: ${JSON.stringify({ url: REDIS_URL, name: 'turns', prefix: workers.prefix })}, model: { name: 'none', async call() { throw new Error('not called'); } } };`,
        );
        const listed = await trellis(cwd, 'queue', 'parked');
        expect(listed.code).toBe(0);
        expect(listed.out).toContain('send.p1.t0  send of session p1 (agent ledger-keeper), parked ');
        expect(listed.out).toContain('after 3 crashes');
        expect(JSON.parse((await trellis(cwd, 'queue', 'parked', '--json')).out)).toEqual(parked);
        expect(await trellis(cwd, 'queue', 'drop', 'send.p1.nope')).toMatchObject({
          code: 1,
          err: expect.stringContaining('No turn is parked under job id "send.p1.nope"'),
        });

        // The cause is fixed (workers without the crash): the operator retries the parked turn, which runs once as a new turn.
        serving = false;
        current!.process.kill('SIGTERM');
        expect(await current!.exited).toBe(0);
        await workers.start('fixed', FAST);
        const retried = await trellis(cwd, 'queue', 'retry', 'send.p1.t0');
        expect(retried).toMatchObject({ code: 0, out: 'Done: completed: done: recorded crash:p1-t0\n' });
        expect(retried.err).toMatch(/queued send\.p1\.t0%2Eretry-\d+ \(the retry of send\.p1\.t0\)/);
        expect((await workers.runsOf('crash:p1-t0')).map((r) => r.worker)).toEqual([...deaths, 'fixed']);
        expect(await queue.parkedTurns()).toEqual([]);
        expect((await trellis(cwd, 'queue', 'parked')).out).toBe('No parked turns.\n');
        await expect(queue.retryParked('send.p1.t0')).rejects.toMatchObject({ code: 'InvalidOptions' });
      } finally {
        rmSync(cwd, { recursive: true, force: true });
      }
      const retriedJob = `send.p1.t0%2Eretry-${Date.parse(parked[0]!.parkedAt)}`;

      // The session's turns: the parked one ended cancelled (its steps discarded), then the next turn and the retry.
      const turns = (
        await workers.schemas.admin.query(
          `SELECT record->>'key' AS key, record->>'status' AS status FROM "${workers.schema}".turns WHERE session_id = 'p1' ORDER BY turn_index`,
        )
      ).rows;
      expect(turns).toEqual([
        { key: 'send.p1.t0', status: 'cancelled' },
        { key: 'send.p1.t1', status: 'completed' },
        { key: retriedJob, status: 'completed' },
      ]);
    }, 240_000);

    it('refuses a maxCrashes that is not a whole number from 1 to 100', () => {
      for (const maxCrashes of [0, 1.5, 101, Number.NaN]) {
        expect(
          () =>
            new TrellisWorker({
              url: REDIS_URL,
              prefix: workers.prefix,
              store: new MemoryStore(),
              agent: () => Promise.reject(new Error('never')),
              maxCrashes,
            }),
        ).toThrow(/maxCrashes must be a whole number from 1 to 100/);
      }
    });
  },
);
