import 'reflect-metadata';
import type { INestApplication } from '@nestjs/common';
import { Test } from '@nestjs/testing';
import { MemoryStore, TrellisError, type ModelRequest, type ScriptedReply } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { getAgentToken, TrellisModule, type HostedAgent } from 'trellis/nestjs';
import { Ledger, LedgerModule } from './ledger-plugin.js';

/** The tool results of this turn (those after the last user message). */
const toolMessages = (request: ModelRequest) =>
  request.messages.slice(request.messages.findLastIndex((m) => m.role === 'user')).filter((m) => m.role === 'tool');

/** What a `held:` message of the front agent waits for before it asks the clerk, and who hears that it waits. */
let held: Promise<void> = Promise.resolve();
let onHeld: () => void = () => undefined;

/**
 * `front` hands every message to its sub-agent `clerk` (the `ask_clerk` agent tool);
 * `clerk` records it with `ledger.record`, whose gate parks lines starting with `approve:`.
 * So an `approve:` message leaves two sessions waiting: the front one and the clerk's.
 */
function agents() {
  const clerk = new ScriptedModel((request): ScriptedReply => {
    const results = toolMessages(request);
    if (results.length > 0) return `clerk: ${results[0]!.content}`;
    return { toolCalls: [{ id: 'c1', name: 'ledger.record', args: { line: request.messages.at(-1)!.content } }] };
  });
  const front = new ScriptedModel(async (request): Promise<ScriptedReply> => {
    const results = toolMessages(request);
    if (results.length > 0) return `front: ${results[0]!.content}`;
    const message = request.messages.at(-1)!.content;
    if (message.startsWith('held:')) {
      onHeld();
      await held;
    }
    return { toolCalls: [{ id: 't1', name: 'ask_clerk', args: { input: message.replace(/^held:/, '') } }] };
  });
  return [
    { name: 'clerk', model: clerk, instructions: 'Keep the ledger.', plugins: ['ledger'] },
    {
      name: 'front',
      model: front,
      instructions: 'Delegate.',
      agents: [{ agent: 'clerk', name: 'ask_clerk', description: 'Records a line. Tests only.' }],
    },
  ];
}

async function boot(store: MemoryStore): Promise<INestApplication> {
  const ref = await Test.createTestingModule({
    imports: [TrellisModule.forRoot({ store, agents: agents() }), LedgerModule],
  }).compile();
  const app = ref.createNestApplication({ logger: false });
  await app.init();
  return app;
}

describe('HostedSession.cancelPending() with turns in process', () => {
  let store: MemoryStore;
  const apps: INestApplication[] = [];
  const front = (app: INestApplication) => app.get<HostedAgent>(getAgentToken('front'));
  const waitingSessions = async () =>
    (await store.list())
      .filter((s) => s.suspended)
      .map((s) => s.id)
      .sort();

  beforeEach(async () => {
    store = new MemoryStore();
    apps.push(await boot(store));
  });

  afterEach(async () => {
    for (const app of apps.splice(0)) await app.close();
  });

  it("cancels the suspended turn and its sub-agent's, so no call runs and the session takes a new message", async () => {
    const session = front(apps[0]!).session('s1');
    const first = await session.send('approve:refund');
    expect(first.suspended?.map((p) => p.callId)).toEqual(['t1/c1']);
    const [child] = (await waitingSessions()).filter((id) => id !== 's1');
    expect(await waitingSessions()).toEqual(['s1', child]);

    await expect(session.cancelPendingOutcome()).resolves.toEqual({ cancelled: true, recovered: false });

    expect(await waitingSessions()).toEqual([]);
    expect(await session.pending()).toEqual([]);
    expect((await store.load('s1'))!.turns.at(-1)!.status).toBe('cancelled');
    expect((await store.load(child!))!.turns.at(-1)!.status).toBe('cancelled');
    expect(session.transcript.at(-1)).toMatchObject({ role: 'tool', content: expect.stringContaining('Cancelled') });
    await expect(session.cancelPending()).resolves.toBe(false);
    await expect(session.resume({ decisions: [{ callId: 't1/c1', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });
    await expect(session.send('plain')).resolves.toMatchObject({
      status: 'completed',
      reply: 'front: clerk: recorded plain',
    });
    expect(apps[0]!.get(Ledger).lines).toEqual(['plain']);
  });

  it('keeps the session lease: SessionBusy while another instance runs a turn, or waits for it with waitForLease', async () => {
    // Two instances of one app on one store, as behind a load balancer.
    apps.push(await boot(store));
    const [a, b] = apps as [INestApplication, INestApplication];
    let release!: () => void;
    held = new Promise((resolve) => (release = resolve));
    const atModel = new Promise<void>((resolve) => (onHeld = resolve));
    // a's turn holds the session's lease from before its first model call until its checkpoint.
    const running = front(a).session('s2').send('held:approve:refund');
    await atModel;

    const busy = await front(b)
      .session('s2')
      .cancelPending()
      .catch((e: unknown) => e);
    let settled = false;
    const waiting = front(b).session('s2').cancelPending({ waitForLease: 10_000 });
    waiting.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(settled).toBe(false);
    release();

    expect(TrellisError.is(busy, 'SessionBusy')).toBe(true);
    await expect(running).resolves.toMatchObject({ status: 'suspended' });
    await expect(waiting).resolves.toBe(true);
    expect((await store.load('s2'))!.turns.map((t) => t.status)).toEqual(['cancelled']);
    expect(await waitingSessions()).toEqual([]);
    expect([...a.get(Ledger).lines, ...b.get(Ledger).lines]).toEqual([]);
  });

  it('refuses bad options, and new cancels once shutdown began; an ended session is cancelled from the store as the kernel does', async () => {
    const session = front(apps[0]!).session('s3');
    await session.send('approve:refund');

    await expect(session.cancelPending({ waitForLease: -1 })).rejects.toThrow(
      'cancelPending(): waitForLease must be a number of milliseconds (0 or more), got -1',
    );
    await expect(session.cancelPending({ waitForLease: Number.NaN })).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(session.cancelPending(null as never)).rejects.toMatchObject({ code: 'InvalidOptions' });
    await expect(session.cancelPendingOutcome({ waitForLease: -1 })).rejects.toMatchObject({ code: 'InvalidOptions' });
    expect(await session.pending()).toHaveLength(1);

    await session.end();
    await expect(session.cancelPending()).resolves.toBe(true);

    await apps[0]!.close();
    await expect(session.cancelPending()).rejects.toMatchObject({ code: 'NotStarted' });
  });
});
