import { haveService, REDIS_URL } from '../../support/services.js';
import { WorkerProcesses } from '../../support/worker-processes.js';
import { TurnQueue } from '../../../queue.js';

const available =
  (await haveService('postgres', 'decision-once queue test')) &&
  (await haveService('redis', 'decision-once queue test'));

const SESSIONS = [0, 1, 2, 3].map((n) => `d${n}`);
const line = (session: string) => `approve:${session}-t0`;
/** What a call cut off mid-run waits for: a new decision (naming the resume whose decision it used up). */
const cutOff = (callId: string, spentBy?: string) =>
  expect.objectContaining({
    callId,
    tool: 'ledger.approve',
    ticket: expect.objectContaining({
      allowedDecisions: ['retry', 'skip'],
      data: expect.objectContaining({ interrupted: true, ...(spentBy !== undefined && { spentBy }) }),
    }),
  });

(available ? describe : describe.skip)(
  'a decision is consumed once, whatever crashes (queue workers SIGKILLed inside decided calls)',
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

    it('4 calls approved, then retried, each cut off by a SIGKILL with all 4 in flight (concurrency 4): each re-run asks again, no call runs a third time', async () => {
      // Each worker holds every tool run open after its side effect and dies once 4 are in flight.
      const dyingOnApprove = await workers.start('dying-approve', {
        SCALE_CONCURRENCY: '4',
        SCALE_HOLD_TOOLS: '1',
        SCALE_KILL_AFTER: '4',
      });
      const asked = await Promise.all(
        SESSIONS.map((sessionId) =>
          queue.send({ agent: 'ledger-keeper', sessionId, key: 't0', message: line(sessionId) }),
        ),
      );
      const callIds = asked.map((turn) => {
        expect(turn.result.status).toBe('suspended');
        return turn.result.suspended![0]!.callId;
      });

      // Approved: the 4 calls run at once and their worker dies inside them.
      const approved = SESSIONS.map((sessionId, i) =>
        queue.resume({
          agent: 'ledger-keeper',
          sessionId,
          key: 'approve',
          decisions: [{ callId: callIds[i]!, decision: 'approve' }],
        }),
      );
      expect(await dyingOnApprove.exited).toBeNull();
      // The next worker takes the 4 stalled jobs: each approval is spent, each call asks again.
      const dyingOnRetry = await workers.start('dying-retry', {
        SCALE_CONCURRENCY: '4',
        SCALE_HOLD_TOOLS: '1',
        SCALE_KILL_AFTER: '4',
      });
      for (const [i, turn] of (await Promise.all(approved)).entries()) {
        expect(turn).toMatchObject({ recovered: true, worker: 'dying-retry', result: { status: 'suspended' } });
        expect(turn.result.suspended).toEqual([cutOff(callIds[i]!)]);
      }

      // A human says retry: the 4 calls run again (same key) and that worker dies inside them too.
      const retried = SESSIONS.map((sessionId, i) =>
        queue.resume({
          agent: 'ledger-keeper',
          sessionId,
          key: 'retry',
          decisions: [{ callId: callIds[i]!, decision: 'retry' }],
        }),
      );
      expect(await dyingOnRetry.exited).toBeNull();
      // The retry jobs run again on a third worker: the retry is spent too, so each asks again.
      await workers.start('rescuer', { SCALE_CONCURRENCY: '4' });
      const afterRetry = await Promise.all(retried);
      for (const sessionId of SESSIONS) {
        const runs = await workers.runsOf(line(sessionId));
        // Once under the approval, once under the retry: never again under a decision already used.
        expect({ sessionId, ran: runs.map((r) => r.worker) }).toEqual({
          sessionId,
          ran: ['dying-approve', 'dying-retry'],
        });
        expect(new Set(runs.map((r) => r.key)).size).toBe(1);
      }
      for (const [i, turn] of afterRetry.entries()) {
        expect(turn).toMatchObject({ recovered: true, worker: 'rescuer', result: { status: 'suspended' } });
        expect(turn.result.suspended).toEqual([cutOff(callIds[i]!, `resume.${SESSIONS[i]}.retry`)]);
      }

      // The human looks and skips: the turns complete, and nothing runs again.
      const skipped = await Promise.all(
        SESSIONS.map((sessionId, i) =>
          queue.resume({
            agent: 'ledger-keeper',
            sessionId,
            key: 'skip',
            decisions: [{ callId: callIds[i]!, decision: 'skip' }],
          }),
        ),
      );
      for (const turn of skipped) expect(turn.result.status).toBe('completed');
      for (const sessionId of SESSIONS) expect(await workers.runsOf(line(sessionId))).toHaveLength(2);
    }, 180_000);
  },
);
