import 'reflect-metadata';
import { IsInt } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  StateKey,
  ScriptedModel,
  MemoryStore,
  suspend,
  type HookContext,
  type ToolCallInfo,
  type ToolContext,
  type ScriptedReply,
} from '../../../index.js';
import type { SuspensionRecord } from '../../../host.js';

class PayInput {
  @IsInt() amount!: number;
}

/** Runs of `mem.pay` across every app in a test, as if across processes. */
let payments: number[] = [];

@Plugin({ name: 'mem', version: '1.0.0' })
@StateKey('mem.visits', { scope: 'session', merge: 'exclusive', persistent: true })
@StateKey('mem.scratch', { scope: 'session', merge: 'exclusive' })
class MemoPlugin {
  @Hook('task.start')
  count(_v: unknown, ctx: HookContext) {
    ctx.set('mem.visits', (ctx.get<number>('mem.visits') ?? 0) + 1);
    ctx.set('mem.scratch', 'temporary');
  }

  @Tool({ name: 'mem.pay', description: 'Pays an amount. Needs approval above 100.', input: PayInput })
  pay(input: PayInput, _ctx: ToolContext) {
    payments.push(input.amount);
    return `paid ${input.amount}`;
  }

  @Hook('tool.gate')
  approval(call: ToolCallInfo) {
    if ((call.args as PayInput).amount > 100) return suspend({ message: 'Large payment: approve?' });
    return undefined;
  }
}

/** A fresh app, agent and session over `store`, as a new process would build them. */
async function open(store: MemoryStore, script: ScriptedReply[]) {
  const app = Trellis.create({ store });
  await app.install(MemoPlugin);
  const model = new ScriptedModel(script);
  const session = app.agent({ name: 'payer', model, instructions: 'Pay bills.' }).session('s1');
  return { app, model, session };
}

beforeEach(() => {
  payments = [];
});

describe('checkpoints in a MemoryStore', () => {
  it('stores transcript, turn records and persistent session keys (not the others) after each turn', async () => {
    const store = new MemoryStore();
    const { session } = await open(store, ['hello', 'again']);

    await session.send('hi');
    const afterOne = await store.load('s1');
    expect(afterOne!.transcript).toEqual([
      { role: 'user', content: 'hi' },
      { role: 'assistant', content: 'hello' },
    ]);

    await session.send('hi again');
    const stored = await store.load('s1');

    expect(stored!.agent).toBe('payer');
    expect(stored!.transcript.map((m) => m.content)).toEqual(['hi', 'hello', 'hi again', 'again']);
    expect(stored!.turns.map((t) => [t.index, t.input, t.status, t.reply, t.rounds])).toEqual([
      [0, 'hi', 'completed', 'hello', 1],
      [1, 'hi again', 'completed', 'again', 1],
    ]);
    expect(stored!.state['mem.visits']).toBe(2);
    expect(stored!.state).not.toHaveProperty('mem.scratch');
    expect(stored!.suspension).toBeNull();
    expect(stored!.steps).toBeUndefined();
    // Each turn journalled its model response (one step write), then checkpointed: two writes a turn.
    expect(stored!.revision).toBe(4);
  });

  it('a new app over the same store continues the session: transcript and persistent keys restored', async () => {
    const store = new MemoryStore();
    const first = await open(store, ['one']);
    await first.session.send('a');

    const second = await open(store, ['two']);
    await second.session.send('b');

    expect(second.model.calls[0]!.messages.map((m) => m.content)).toEqual(['Pay bills.', 'a', 'one', 'b']);
    expect(second.session.values['mem.visits']).toBe(2);
    expect((await store.load('s1'))!.turns.map((t) => t.index)).toEqual([0, 1]);
  });
});

describe('resuming a suspended turn from the store (another process)', () => {
  const script: ScriptedReply[] = [
    {
      toolCalls: [
        { name: 'mem.pay', args: { amount: 500 }, id: 'p1' },
        { name: 'mem.pay', args: { amount: 5 }, id: 'p2' },
      ],
    },
    'Both paid.',
  ];

  it('a new app, agent and session run the approved call exactly once and complete the turn', async () => {
    const store = new MemoryStore();
    const first = await open(store, script);
    const suspended = await first.session.send('pay my bills');
    expect(suspended.status).toBe('suspended');
    expect(payments).toEqual([5]);
    const stored = await store.load('s1');
    expect(stored!.suspension).toMatchObject({ version: 1, pending: [{ callId: 'p1', tool: 'mem.pay' }] });
    expect(stored!.turns[0]!.status).toBe('suspended');

    const second = await open(store, ['Both paid.']);
    const result = await second.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] });

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('Both paid.');
    expect(payments).toEqual([5, 500]);
    const toolMessages = second.model.calls[0]!.messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => m.content)).toEqual(['paid 500', 'paid 5']);
    const after = await store.load('s1');
    expect(after!.suspension).toBeNull();
    expect(after!.turns).toHaveLength(1);
    expect(after!.turns[0]).toMatchObject({ index: 0, status: 'completed', reply: 'Both paid.', rounds: 2 });
    expect(after!.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);

    // The decision again, from a third process: refused, and nothing runs twice.
    const third = await open(store, []);
    await expect(third.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });
    expect(payments).toEqual([5, 500]);
  });

  it('a stored suspension record with an unknown version is refused with InvalidCheckpoint; nothing runs', async () => {
    const store = new MemoryStore();
    const first = await open(store, script);
    await first.session.send('pay my bills');
    const stored = (await store.load('s1'))!;
    await store.checkpoint({
      sessionId: 's1',
      agent: 'payer',
      expectedRevision: stored.revision,
      state: stored.state,
      append: [],
      turn: stored.turns[0]!,
      suspension: { ...(stored.suspension as SuspensionRecord), version: 99 },
    });

    const second = await open(store, ['never']);
    await expect(second.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidCheckpoint',
    });

    expect(payments).toEqual([5]);
    expect(second.model.calls).toHaveLength(0);
    expect(((await store.load('s1'))!.suspension as { version: number }).version).toBe(99);
  });

  it('a malformed record (pending is not a list) is refused the same way', async () => {
    const store = new MemoryStore();
    const first = await open(store, script);
    await first.session.send('pay my bills');
    const stored = (await store.load('s1'))!;
    await store.checkpoint({
      sessionId: 's1',
      agent: 'payer',
      expectedRevision: stored.revision,
      state: stored.state,
      append: [],
      turn: stored.turns[0]!,
      suspension: { ...(stored.suspension as SuspensionRecord), pending: 'p1' },
    });

    const second = await open(store, ['never']);
    await expect(second.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidCheckpoint',
    });
    expect(payments).toEqual([5]);
  });

  it('two processes resuming the same turn at once: the call runs once, the loser is refused with SessionBusy', async () => {
    const store = new MemoryStore();
    const first = await open(store, script);
    await first.session.send('pay my bills');
    const b = await open(store, ['Both paid.']);
    const c = await open(store, ['Both paid.']);

    const outcomes = await Promise.allSettled([
      b.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] }),
      c.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] }),
    ]);

    expect(payments).toEqual([5, 500]);
    const statuses = outcomes
      .map((o) => (o.status === 'fulfilled' ? o.value.status : (o.reason as { code: string }).code))
      .sort();
    expect(statuses).toEqual(['SessionBusy', 'completed']);
    expect((await store.load('s1'))!.turns[0]!.status).toBe('completed');

    // The loser reloads from the store on its next call: the turn is finished, nothing is left to decide.
    const loser = outcomes[0].status === 'rejected' ? b : c;
    await expect(loser.session.resume({ decisions: [{ callId: 'p1', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });
    expect(loser.session.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
    expect(payments).toEqual([5, 500]);
  });
});
