import { Queue } from 'bullmq';
import { firstValueFrom, filter, toArray, take, timeout } from 'rxjs';
import { MemoryStore, TrellisError, type Agent } from '../../../index.js';
import { TrellisWorker, TurnQueue, jobIdOf } from '../../../queue.js';
import { createQueueApp } from '../../support/queue-app.js';
import { REDIS_URL, haveService } from '../../support/services.js';

const available = await haveService('redis', 'TurnQueue and TrellisWorker');
const prefix = `trellis_t${process.pid}_${Date.now().toString(36)}`;

(available ? describe : describe.skip)('TurnQueue with TrellisWorker on Redis', () => {
  const queueName = 'turns';
  let store: MemoryStore;
  const ledger: string[] = [];
  let worker: TrellisWorker;
  let agent: Agent;
  let queue: TurnQueue;
  let other: TurnQueue;
  let count = 0;
  /** A session id no other test used: the suite shares one queue and one store. */
  let s1: string;

  beforeEach(() => {
    s1 = `s${count++}`;
    ledger.length = 0;
  });

  beforeAll(async () => {
    store = new MemoryStore();
    const host = createQueueApp(store, (line) => void ledger.push(line), 5);
    await host.install();
    agent = host.agent();
    worker = new TrellisWorker({ url: REDIS_URL, prefix, queueName, store, agent: () => agent, concurrency: 4 });
    await worker.start();
    queue = new TurnQueue({ url: REDIS_URL, prefix, queueName, pollMs: 200 });
    other = new TurnQueue({ url: REDIS_URL, prefix, queueName, pollMs: 200 });
  });

  afterAll(async () => {
    await worker.close();
    await queue.close();
    await other.close();
  });

  afterAll(async () => {
    const { Redis } = await import('ioredis');
    const redis = new Redis(REDIS_URL);
    const keys = await redis.keys(`${prefix}:*`);
    if (keys.length > 0) await redis.del(...keys);
    await redis.quit();
  });

  it('runs a queued send on the worker and hands the result back to the enqueuer', async () => {
    const done = await queue.send({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'first' });

    expect(done).toMatchObject({
      jobId: jobIdOf('send', s1, 'm1'),
      sessionId: s1,
      kind: 'send',
      recovered: false,
      worker: worker.id,
    });
    expect(done.result).toMatchObject({ status: 'completed', reply: 'done: recorded first', rounds: 2 });
    expect(ledger).toEqual(['first']);
    expect((await store.load(s1))!.turns).toHaveLength(1);
  });

  it('runs 5 sends enqueued back to back to one session in their order, each started as soon as the one before it finished', async () => {
    const started = Date.now();
    const queued = [];
    for (let i = 0; i < 5; i++)
      queued.push(await queue.enqueueSend({ agent: 'ledger-keeper', sessionId: s1, key: `m${i}`, message: `m${i}` }));
    const results = await Promise.all(queued.map((q) => q.result));
    expect(results.map((r) => r.result.status)).toEqual([
      'completed',
      'completed',
      'completed',
      'completed',
      'completed',
    ]);
    expect(ledger).toEqual(['m0', 'm1', 'm2', 'm3', 'm4']);
    // The worker that ends a turn wakes the next (BullMQ's promote): no turn waits out the 1 s fallback.
    expect(Date.now() - started).toBeLessThan(2500);
  });

  it("applies the queue's per-agent doubleTexting policy, which a send's own overrides", async () => {
    const strict = new TurnQueue({
      url: REDIS_URL,
      prefix,
      queueName,
      pollMs: 200,
      doubleTexting: { 'ledger-keeper': 'reject' },
    });
    try {
      const running = await strict.enqueueSend({
        agent: 'ledger-keeper',
        sessionId: s1,
        key: 'w',
        message: 'wait:policy',
      });
      while (!ledger.includes('start:wait:policy')) await new Promise((resolve) => setTimeout(resolve, 10));
      await expect(
        strict.enqueueSend({ agent: 'ledger-keeper', sessionId: s1, key: 'r', message: 'refused' }),
      ).rejects.toMatchObject({ code: 'SessionBusy' });
      // The send's own policy wins: interrupt the running turn and run.
      const next = await strict.send({
        agent: 'ledger-keeper',
        sessionId: s1,
        key: 'i',
        message: 'interrupting',
        doubleTexting: 'interrupt',
      });
      expect([(await running.result).result.status, next.result.status]).toEqual(['cancelled', 'completed']);
      expect(ledger).toEqual(['wait:policy', 'start:wait:policy', 'aborted:wait:policy', 'interrupting']);
    } finally {
      await strict.close();
    }
  });

  it('runs a turn enqueued twice under the same key once, and gives both callers its result', async () => {
    const [a, b] = await Promise.all([
      queue.enqueueSend({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'once' }),
      other.enqueueSend({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'once' }),
    ]);
    const [ra, rb] = await Promise.all([a.result, b.result]);
    const again = await queue.enqueueSend({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'once' });

    expect(again.duplicate).toBe(true);
    expect((await again.result).result.reply).toBe('done: recorded once');
    expect(ra.result.reply).toBe('done: recorded once');
    expect(rb).toEqual(ra);
    expect(ledger).toEqual(['once']);
    expect((await store.load(s1))!.turns).toHaveLength(1);
  });

  it('runs turns of one session one at a time, across concurrent jobs, losing none', async () => {
    const results = await Promise.all(
      Array.from({ length: 6 }, (_, i) =>
        queue.send({ agent: 'ledger-keeper', sessionId: s1, key: `m${i}`, message: `line ${i}` }),
      ),
    );

    expect(results.map((r) => r.result.status)).toEqual(Array(6).fill('completed'));
    expect([...ledger].sort()).toEqual(Array.from({ length: 6 }, (_, i) => `line ${i}`).sort());
    const stored = (await store.load(s1))!;
    expect(stored.turns).toHaveLength(6);
    expect(
      stored.transcript
        .filter((m) => m.role === 'user')
        .map((m) => m.content)
        .sort(),
    ).toEqual([...ledger].sort());
  });

  it('suspends for approval, and a resume queued from another instance runs the approved call once', async () => {
    const suspended = await queue.send({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'approve:refund' });
    expect(suspended.result.status).toBe('suspended');
    const callId = suspended.result.suspended![0]!.callId;
    expect(ledger).toEqual([]);

    const resumed = await other.resume({
      agent: 'ledger-keeper',
      sessionId: s1,
      key: `r-${callId}`,
      decisions: [{ callId, decision: 'approve' }],
    });
    const twice = await other.resume({
      agent: 'ledger-keeper',
      sessionId: s1,
      key: `r-${callId}`,
      decisions: [{ callId, decision: 'approve' }],
    });

    expect(resumed.result).toMatchObject({ status: 'completed', reply: 'done: recorded approve:refund' });
    expect(twice).toEqual(resumed);
    expect(ledger).toEqual(['approve:refund']);
  });

  it('cancels a suspended turn on the worker (cancelPending): the parked call never runs; the same key answers once; a decision after it is refused', async () => {
    const suspended = await queue.send({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'approve:refund' });
    const callId = suspended.result.suspended![0]!.callId;

    const cancelled = await other.cancelPending({ agent: 'ledger-keeper', sessionId: s1, key: 'c1' });
    const again = await queue.cancelPending({ agent: 'ledger-keeper', sessionId: s1, key: 'c1' });
    const nothing = await queue.cancelPending({ agent: 'ledger-keeper', sessionId: s1, key: 'c2' });

    expect(cancelled).toEqual({
      jobId: jobIdOf('cancel', s1, 'c1'),
      sessionId: s1,
      kind: 'cancel',
      cancelled: true,
      recovered: false,
      worker: worker.id,
    });
    expect(again).toEqual(cancelled);
    expect(nothing).toMatchObject({ jobId: jobIdOf('cancel', s1, 'c2'), cancelled: false });
    const stored = (await store.load(s1))!;
    expect(stored.turns.map((t) => t.status)).toEqual(['cancelled']);
    expect(stored.transcript.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('Cancelled') });
    await expect(
      queue.resume({ agent: 'ledger-keeper', sessionId: s1, key: 'r1', decisions: [{ callId, decision: 'approve' }] }),
    ).rejects.toMatchObject({ code: 'InvalidDecision' });
    expect(ledger).toEqual([]);
  });

  it('answers a cancel whose earlier attempt cancelled the turn and died before the job was marked done as recovered, without cancelling anything again', async () => {
    await queue.send({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'approve:refund' });
    const startRevision = (await store.load(s1))!.revision;
    // The earlier attempt: it recorded startRevision on the job, cancelled the turn, and its worker died.
    await agent.session(s1).cancelPending();
    const bull = new Queue(queueName, { connection: { url: REDIS_URL }, prefix });
    const jobId = jobIdOf('cancel', s1, 'c1');
    try {
      await bull.add(
        'cancel',
        { kind: 'cancel', agent: 'ledger-keeper', sessionId: s1, key: 'c1', startRevision },
        { jobId, attempts: 5 },
      );

      // The same key again: the enqueuer waits for that job's answer.
      const answer = await queue.cancelPending({ agent: 'ledger-keeper', sessionId: s1, key: 'c1' });

      expect(answer).toMatchObject({ jobId, kind: 'cancel', cancelled: true, recovered: true });
      expect((await store.load(s1))!.turns.map((t) => t.status)).toEqual(['cancelled']);
    } finally {
      await bull.close();
    }
  });

  it('fans the session events out to any instance that watches', async () => {
    const events = firstValueFrom(
      other.events$(s1).pipe(
        filter((e) => e.type.startsWith('tool.') || e.type.startsWith('turn.')),
        take(2),
        toArray(),
        timeout(10_000),
      ),
    );
    await new Promise((resolve) => setTimeout(resolve, 100));

    await queue.send({ agent: 'ledger-keeper', sessionId: s1, key: 'm1', message: 'watched' });

    expect((await events).length).toBe(2);
  });

  it('fails a turn that no retry can fix at once, with the kernel error code, on the enqueuer', async () => {
    const error = await queue
      .resume({
        agent: 'ledger-keeper',
        sessionId: 'never',
        key: 'r1',
        decisions: [{ callId: 'nope', decision: 'approve' }],
      })
      .catch((e: unknown) => e);

    expect(TrellisError.is(error)).toBe(true);
    expect((error as TrellisError).code).toBe('InvalidDecision');
  });

  it('rejects the results still awaited when the queue closes, with Cancelled', async () => {
    // A queue no worker serves: the result never comes.
    const idle = new TurnQueue({ url: REDIS_URL, prefix, queueName: 'unserved', pollMs: 100 });
    const { result } = await idle.enqueueSend({
      agent: 'ledger-keeper',
      sessionId: s1,
      key: 'm1',
      message: 'never run',
    });
    const settled = result.catch((e: unknown) => e);

    await idle.close();

    const error = await settled;
    expect(TrellisError.is(error, 'Cancelled')).toBe(true);
    expect((error as Error).message).toContain('the turn still runs on its worker');
  });

  it('refuses a malformed request before queueing it', async () => {
    await expect(queue.enqueueSend({ agent: '', sessionId: s1, key: 'm1', message: 'x' })).rejects.toMatchObject({
      code: 'InvalidOptions',
    });
    await expect(queue.enqueueResume({ agent: 'a', sessionId: s1, key: 'm1', decisions: [] })).rejects.toThrow(
      /decisions must be a non-empty list/,
    );
    await expect(queue.cancelPending({ agent: 'a', sessionId: s1, key: '' })).rejects.toThrow(
      'Cannot queue a cancel:\n- key must be a non-empty string',
    );
  });
});
