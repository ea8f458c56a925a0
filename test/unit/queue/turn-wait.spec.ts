import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsString } from 'class-validator';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  suspend,
  Tool,
  Trellis,
  TrellisError,
  type ModelRequest,
} from '../../../index.js';
import { jobIdOf, type TurnJobResult } from '../../../queue.js';
import { failedJobError, landedResult, TurnWait, type JobProbe } from '../../../src/hosts/queue/turn-wait.js';
import type { TurnJobData } from '../../../src/hosts/queue/turn-request.js';

class PayInput {
  @IsString() to!: string;
}

/** A tool that waits for approval, so a turn can land suspended and a resume land after it. */
@Plugin({ name: 'pay', version: '1.0.0' })
class PayPlugin {
  @Tool({ name: 'pay.send', description: 'Pays someone.', input: PayInput })
  send(input: PayInput): string {
    return `paid ${input.to}`;
  }

  @Hook('tool.gate')
  gate() {
    return suspend({ message: 'Pay?', allowedDecisions: ['approve', 'reject'] });
  }
}

const reply = (request: ModelRequest) => {
  const last = request.messages.at(-1)!;
  if (last.role === 'tool') return `done: ${last.content}`;
  if (last.content.startsWith('pay'))
    return { toolCalls: [{ id: `call_${randomUUID()}`, name: 'pay.send', args: { to: 'bob' } }] };
  return `hello ${last.content}`;
};

const send = (sessionId: string, key: string, message = 'm'): TurnJobData => ({
  kind: 'send',
  agent: 'a',
  sessionId,
  key,
  message,
});
const never = () => new Promise<JobProbe>(() => undefined);

describe('a caller waiting for a queued turn (TurnWait)', () => {
  let store: MemoryStore;
  let app: Trellis;

  beforeAll(async () => {
    store = new MemoryStore();
    app = Trellis.create({ store });
    await app.install(PayPlugin);
    const agent = app.agent({ name: 'a', model: new ScriptedModel(reply), instructions: 'x' });
    // A turn that landed under its job id, as a worker runs it (the job id is the turn's key).
    await agent.session('s1').send('there', { key: jobIdOf('send', 's1', 'k0') });
  });
  afterAll(() => app.stop());

  const wait = (data: TurnJobData, probe: () => Promise<JobProbe>, waitMs = 5_000) =>
    new TurnWait<TurnJobResult>({
      jobId: jobIdOf(data.kind, data.sessionId, data.key),
      data,
      waitMs,
      pollMs: 50,
      store,
      probe,
    });
  const elsewhere = {
    jobId: 'x',
    sessionId: 's1',
    kind: 'send',
    result: { status: 'completed' },
    recovered: false,
    worker: 'B',
  } as unknown as TurnJobResult;

  it("ignores a fenced attempt's LeaseLost and Missing lock reports and takes the outcome of the worker holding the job", async () => {
    const w = wait(send('s1', 'k0'), never);
    w.heard({ ok: false, error: { code: 'LeaseLost', message: "Session 's1' is held by another writer now" } });
    w.heard({ ok: false, error: { code: 'TurnFailed', message: 'Missing lock for job send.s1.k0. moveToFinished' } });
    w.heard({ ok: true, value: elsewhere });
    await expect(w.result).resolves.toBe(elsewhere);
  });

  it("answers a worker's 'Missing key for job' with the turn that landed in the store, never the raw error", async () => {
    const w = wait(send('s1', 'k0'), never);
    w.heard({ ok: false, error: { code: 'TurnFailed', message: 'Missing key for job send.s1.k0. updateData' } });
    await expect(w.result).resolves.toMatchObject({
      jobId: 'send.s1.k0',
      kind: 'send',
      recovered: true,
      worker: '',
      result: { status: 'completed', reply: 'hello there', rounds: 1, toolCalls: [] },
    });
  });

  it("turns 'Missing key for job' of a turn that did not land into QueuedTurnLost with a hint", async () => {
    const w = wait(send('s1', 'k9'), never);
    w.heard({ ok: false, error: { code: 'TurnFailed', message: 'Missing key for job send.s1.k9. updateData' } });
    const error = await w.result.catch((e: unknown) => e);
    expect(error).toMatchObject({
      code: 'QueuedTurnLost',
      retryable: true,
      hint: expect.stringContaining('same key (k9)'),
    });
    expect((error as Error).message).not.toMatch(/^Missing key/);
  });

  it('reads the store when Redis has lost the job, or does not answer', async () => {
    await expect(wait(send('s1', 'k0'), async () => ({ kind: 'missing' })).result).resolves.toMatchObject({
      recovered: true,
      result: { reply: 'hello there' },
    });
    await expect(wait(send('s1', 'k0'), never).result).resolves.toMatchObject({ recovered: true });
    await expect(
      wait(send('s1', 'k0'), () => Promise.reject(new Error('Connection is closed.'))).result,
    ).resolves.toMatchObject({ recovered: true });
    // Redis answers and the job is still to finish: the worker's answer is awaited, and the
    // store read only once more at the bound.
    const started = Date.now();
    await expect(wait(send('s1', 'k0'), async () => ({ kind: 'pending' }), 300).result).resolves.toMatchObject({
      recovered: true,
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(290);
  });

  it('ends at its bound: QueuedTurnTimeout while the job is queued or running, QueuedTurnLost when Redis has no such job', async () => {
    const started = Date.now();
    const timeout = await wait(send('s1', 'k7'), async () => ({ kind: 'pending' }), 400).result.catch(
      (e: unknown) => e,
    );
    expect(Date.now() - started).toBeGreaterThanOrEqual(390);
    expect(Date.now() - started).toBeLessThan(2_000);
    expect(TrellisError.is(timeout, 'QueuedTurnTimeout')).toBe(true);
    expect(timeout).toMatchObject({
      retryable: true,
      hint: expect.stringContaining('same key (k7)'),
      details: { waitMs: 400 },
    });
    const lost = await wait(send('s1', 'k8'), async () => ({ kind: 'missing' }), 400).result.catch((e: unknown) => e);
    expect(TrellisError.is(lost, 'QueuedTurnLost')).toBe(true);
  });

  it('knows a landed send by its job id and a landed resume by a session no longer waiting on its calls', async () => {
    const agent = app.agent({ name: 'a', model: new ScriptedModel(reply), instructions: 'x' });
    const session = agent.session('s2');
    const asked = await session.send('pay bob', { key: jobIdOf('send', 's2', 'k0') });
    const callId = asked.suspended![0]!.callId;
    const resume: TurnJobData = {
      kind: 'resume',
      agent: 'a',
      sessionId: 's2',
      key: 'r0',
      decisions: [{ callId, decision: 'approve' }],
    };
    // Suspended: the send landed (with what it waits on); the resume has not.
    expect(landedResult('send.s2.k0', send('s2', 'k0'), await store.load('s2'))).toMatchObject({
      result: { status: 'suspended', suspended: [expect.objectContaining({ callId })] },
    });
    expect(landedResult('resume.s2.r0', resume, await store.load('s2'))).toBeUndefined();
    await session.resume({ decisions: [{ callId, decision: 'approve' }] });
    expect(landedResult('resume.s2.r0', resume, await store.load('s2'))).toMatchObject({
      kind: 'resume',
      recovered: true,
      result: { status: 'completed', reply: 'done: paid bob' },
    });
    // Another text, or another key, is not this send.
    expect(landedResult('send.s2.k1', send('s2', 'k1'), await store.load('s2'))).toBeUndefined();
    expect(landedResult('send.s3.k0', send('s3', 'k0'), await store.load('s3'))).toBeUndefined();
  });
});

describe("a failed job's error read from Redis instead of its published outcome", () => {
  it('keeps the code the worker failed it with (a poison turn stays PoisonTurn)', () => {
    expect(failedJobError("PoisonTurn: The send of session 's' (job j) was cut off 3 times")).toEqual({
      code: 'PoisonTurn',
      message: "The send of session 's' (job j) was cut off 3 times",
    });
    expect(failedJobError('LeaseLost: a\nb')).toEqual({ code: 'LeaseLost', message: 'a\nb' });
  });

  it('calls anything else QueuedTurnFailed, with the reason as its message', () => {
    expect(failedJobError('job stalled more than allowable limit')).toEqual({
      code: 'QueuedTurnFailed',
      message: 'job stalled more than allowable limit',
    });
    expect(failedJobError('error: lower case is not a code')).toEqual({
      code: 'QueuedTurnFailed',
      message: 'error: lower case is not a code',
    });
    expect(failedJobError(undefined)).toEqual({ code: 'QueuedTurnFailed', message: 'the job failed' });
  });
});
