import 'reflect-metadata';
import { IsInt } from 'class-validator';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  suspend,
  Tool,
  Trellis,
  TrellisError,
  type ToolCallInfo,
  type ToolContext,
} from '../../../index.js';
import type { SessionCheckpoint, StepAppend } from '../../../stores.js';
import type { SuspensionRecord } from '../../../host.js';

class PayInput {
  @IsInt() amount!: number;
}

/** Every run of a tool across the apps of a test, as if across processes: tool, amount, idempotency key. */
let ledger: { tool: string; amount: number; key: string }[] = [];

@Plugin({ name: 'bank', version: '1.0.0' })
class Bank {
  @Tool({ name: 'bank.pay', description: 'Pays an amount. Needs approval.', input: PayInput })
  pay(input: PayInput, ctx: ToolContext) {
    ledger.push({ tool: 'bank.pay', amount: input.amount, key: ctx.idempotencyKey });
    return `paid ${input.amount}`;
  }

  @Tool({
    name: 'bank.quote',
    description: 'Quotes a price. Needs approval; safe to repeat.',
    input: PayInput,
    idempotent: true,
  })
  quote(input: PayInput, ctx: ToolContext) {
    ledger.push({ tool: 'bank.quote', amount: input.amount, key: ctx.idempotencyKey });
    return `quote ${input.amount}`;
  }

  @Tool({ name: 'bank.log', description: 'Logs. No approval.', input: PayInput })
  log(input: PayInput, ctx: ToolContext) {
    ledger.push({ tool: 'bank.log', amount: input.amount, key: ctx.idempotencyKey });
    return 'logged';
  }
}

/** Suspends every call but `bank.log`. */
function gate(call: ToolCallInfo) {
  return call.tool === 'bank.log' ? undefined : suspend({ message: `Approve ${call.tool}?` });
}

/**
 * A store that stops working after `failAfter` more writes (checkpoints and journal steps),
 * as a process killed at that point would: the writes before it are kept, nothing after.
 */
class DyingStore extends MemoryStore {
  failAfter = Infinity;
  override async checkpoint(checkpoint: SessionCheckpoint): Promise<number> {
    if (this.failAfter-- <= 0) throw new Error('killed');
    return super.checkpoint(checkpoint);
  }
  override async appendSteps(append: StepAppend): Promise<number> {
    if (this.failAfter-- <= 0) throw new Error('killed');
    return super.appendSteps(append);
  }
}

const twoCalls = {
  toolCalls: [
    { id: 'p1', name: 'bank.pay', args: { amount: 500 } },
    { id: 'q1', name: 'bank.quote', args: { amount: 7 } },
  ],
};

@Plugin({ name: 'gate', version: '1.0.0' })
class GatePlugin {
  @Hook('tool.gate')
  check(call: ToolCallInfo) {
    return gate(call);
  }
}

async function open(store: MemoryStore, script: (string | object)[]) {
  const app = Trellis.create({ store });
  await app.install(Bank);
  await app.install(GatePlugin);
  const model = new ScriptedModel(script);
  const session = app.agent({ name: 'payer', model, instructions: 'Pay.' }).session('s1');
  return { app, model, session };
}

beforeEach(() => {
  ledger = [];
});

describe('the call journal: approved means it runs once, and the record says what really happened', () => {
  it('runs an approved call that a crash stopped before it started, on the next resume, exactly once', async () => {
    const store = new DyingStore();
    const first = await open(store, [twoCalls]);
    await first.session.send('pay');
    store.failAfter = 1; // the claim is saved, then the process dies before the first call starts
    await expect(
      first.session.resume({
        decisions: [
          { callId: 'p1', decision: 'approve' },
          { callId: 'q1', decision: 'reject' },
        ],
      }),
    ).rejects.toThrow();
    expect(ledger).toEqual([]);

    store.failAfter = Infinity;
    const second = await open(store, ['Paid.']);
    const result = await second.session.resume({
      decisions: [
        { callId: 'p1', decision: 'approve' },
        { callId: 'q1', decision: 'reject' },
      ],
    });

    expect(result.status).toBe('completed');
    expect(ledger).toEqual([{ tool: 'bank.pay', amount: 500, key: 's1:0:1:0' }]);
    expect(result.toolCalls.find((c) => c.callId === 'q1')).toMatchObject({ ok: false, error: { code: 'Rejected' } });
  });

  it('reports a call that finished before the crash with its real result, and does not run it again', async () => {
    const store = new DyingStore();
    const first = await open(store, [twoCalls]);
    await first.session.send('pay');
    store.failAfter = 3; // claim, p1 started, p1 finished; then dies before q1 starts
    await expect(
      first.session.resume({
        decisions: [
          { callId: 'p1', decision: 'approve' },
          { callId: 'q1', decision: 'approve' },
        ],
      }),
    ).rejects.toThrow();
    expect(ledger.map((l) => l.tool)).toEqual(['bank.pay']);

    store.failAfter = Infinity;
    const second = await open(store, ['Done.']);
    const result = await second.session.resume({ decisions: [{ callId: 'q1', decision: 'approve' }] });

    expect(result.status).toBe('completed');
    expect(ledger.map((l) => l.tool)).toEqual(['bank.pay', 'bank.quote']);
    const seen = second.model.calls[0]!.messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId, m.content]);
    expect(seen).toEqual([
      ['p1', 'paid 500'],
      ['q1', 'quote 7'],
    ]);
  });

  it('turns a call cut off mid-run into a retry/skip decision; retry runs it again with the same idempotency key', async () => {
    const store = new DyingStore();
    const first = await open(store, [twoCalls]);
    await first.session.send('pay');
    store.failAfter = 2; // claim, p1 started; p1 runs; the process dies before its result is saved
    await expect(
      first.session.resume({
        decisions: [
          { callId: 'p1', decision: 'approve' },
          { callId: 'q1', decision: 'reject' },
        ],
      }),
    ).rejects.toThrow();
    expect(ledger).toEqual([{ tool: 'bank.pay', amount: 500, key: 's1:0:1:0' }]);

    store.failAfter = Infinity;
    const second = await open(store, ['Paid after a retry.']);
    // What a reviewer is shown after the crash is what resume takes: retry or skip for p1.
    expect(await second.session.pending()).toEqual([
      expect.objectContaining({
        callId: 'p1',
        ticket: expect.objectContaining({
          allowedDecisions: ['retry', 'skip'],
          data: expect.objectContaining({ interrupted: true }),
        }),
      }),
      expect.objectContaining({ callId: 'q1' }),
    ]);
    // Approving again is not enough: nobody knows whether the payment happened.
    const waiting = await second.session.resume({ decisions: [{ callId: 'q1', decision: 'reject' }] });
    expect(waiting.status).toBe('suspended');
    expect(waiting.suspended).toEqual([
      expect.objectContaining({
        callId: 'p1',
        ticket: expect.objectContaining({ allowedDecisions: ['retry', 'skip'] }),
      }),
    ]);
    expect(waiting.suspended![0]!.ticket.message).toMatch(/may or may not have run/);
    const refused = await second.session
      .resume({ decisions: [{ callId: 'p1', decision: 'approve' }] })
      .catch((e: unknown) => e);
    expect(TrellisError.is(refused, 'InvalidDecision')).toBe(true);
    expect(ledger).toHaveLength(1);

    const result = await second.session.resume({ decisions: [{ callId: 'p1', decision: 'retry' }] });
    expect(result.status).toBe('completed');
    expect(ledger).toEqual([
      { tool: 'bank.pay', amount: 500, key: 's1:0:1:0' },
      { tool: 'bank.pay', amount: 500, key: 's1:0:1:0' },
    ]);
    expect(result.toolCalls.find((c) => c.callId === 'q1')).toMatchObject({ ok: false, error: { code: 'Rejected' } });
  });

  it('consumes a decision once: the same resume (its key) tried again after a crash in the call it started asks again', async () => {
    const store = new DyingStore();
    const first = await open(store, [{ toolCalls: [{ id: 'p1', name: 'bank.pay', args: { amount: 40 } }] }]);
    await first.session.send('pay');
    store.failAfter = 2; // claim, started; the call runs; the process dies before its result is saved
    await expect(
      first.session.resume({ key: 'job-a', decisions: [{ callId: 'p1', decision: 'approve' }] }),
    ).rejects.toThrow();
    // The same resume again (a queued job run again after its worker died): the approval is spent.
    store.failAfter = Infinity;
    const again = await (
      await open(store, [])
    ).session.resume({ key: 'job-a', decisions: [{ callId: 'p1', decision: 'approve' }] });
    expect(again.status).toBe('suspended');
    expect(again.suspended).toEqual([
      expect.objectContaining({
        callId: 'p1',
        ticket: expect.objectContaining({
          allowedDecisions: ['retry', 'skip'],
          data: expect.objectContaining({ spentBy: 'job-a' }),
        }),
      }),
    ]);
    expect(ledger).toHaveLength(1);

    // A human says retry; the process dies inside the retried call too.
    const third = await open(store, []);
    store.failAfter = 2;
    await expect(
      third.session.resume({ key: 'job-b', decisions: [{ callId: 'p1', decision: 'retry' }] }),
    ).rejects.toThrow();
    expect(ledger).toHaveLength(2);
    store.failAfter = Infinity;
    // The retry job run again does not run the call a third time: it asks again.
    for (let replay = 0; replay < 3; replay++) {
      const replayed = await (
        await open(store, [])
      ).session.resume({ key: 'job-b', decisions: [{ callId: 'p1', decision: 'retry' }] });
      expect(replayed.status).toBe('suspended');
      expect(replayed.suspended).toEqual([
        expect.objectContaining({
          callId: 'p1',
          ticket: expect.objectContaining({
            allowedDecisions: ['retry', 'skip'],
            data: expect.objectContaining({ spentBy: 'job-b' }),
          }),
        }),
      ]);
    }
    expect(ledger).toHaveLength(2);
    // A new decision (another key) is a new decision: it runs, once, under the same idempotency key.
    const done = await (
      await open(store, ['Paid.'])
    ).session.resume({ key: 'job-c', decisions: [{ callId: 'p1', decision: 'retry' }] });
    expect(done.status).toBe('completed');
    expect(ledger).toEqual([0, 1, 2].map(() => ({ tool: 'bank.pay', amount: 40, key: 's1:0:1:0' })));
  });

  it('skip reports the call skipped and never runs it again', async () => {
    const store = new DyingStore();
    const first = await open(store, [{ toolCalls: [{ id: 'p1', name: 'bank.pay', args: { amount: 9 } }] }]);
    await first.session.send('pay');
    store.failAfter = 2;
    await expect(first.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] })).rejects.toThrow();

    store.failAfter = Infinity;
    const second = await open(store, ['Skipped it.']);
    const result = await second.session.resume({ decisions: [{ callId: 'p1', decision: 'skip' }] });

    expect(result.status).toBe('completed');
    expect(ledger).toHaveLength(1);
    expect(result.toolCalls.find((c) => c.callId === 'p1')).toMatchObject({ ok: false, error: { code: 'Skipped' } });
  });

  it('runs an idempotent tool cut off mid-run again by itself', async () => {
    const store = new DyingStore();
    const first = await open(store, [{ toolCalls: [{ id: 'q1', name: 'bank.quote', args: { amount: 3 } }] }]);
    await first.session.send('quote');
    store.failAfter = 2;
    await expect(first.session.resume({ decisions: [{ callId: 'q1', decision: 'approve' }] })).rejects.toThrow();

    store.failAfter = Infinity;
    const second = await open(store, ['Quoted.']);
    const result = await second.session.resume({ decisions: [{ callId: 'q1', decision: 'approve' }] });

    expect(result.status).toBe('completed');
    expect(ledger).toEqual([
      { tool: 'bank.quote', amount: 3, key: 's1:0:1:0' },
      { tool: 'bank.quote', amount: 3, key: 's1:0:1:0' },
    ]);
    const stored = (await store.load('s1'))!;
    expect(stored.suspension as SuspensionRecord | null).toBeNull();
  });
});
