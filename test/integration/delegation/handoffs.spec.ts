import 'reflect-metadata';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  Trellis,
  block,
  suspend,
  type ModelRequest,
  type ScriptedReply,
} from '../../../index.js';
import type { DelegatedPayload, DelegatingPayload } from '../../../plugin.js';

const lastMessage = (request: ModelRequest) => request.messages.at(-1)!;
const userTexts = (request: ModelRequest) => request.messages.filter((m) => m.role === 'user').map((m) => m.content);

/** Triage hands refund questions over; refunds answers them and hands anything else back. */
function build(store = new MemoryStore(), history?: () => []) {
  const app = Trellis.create({ store });
  const triageModel = new ScriptedModel(
    (request): ScriptedReply => {
      const last = lastMessage(request);
      if (last.role === 'user' && /refund/i.test(last.content))
        return {
          toolCalls: [
            {
              id: `h${request.messages.length}`,
              name: 'handoff_to_refunds',
              args: { input: 'Customer wants a refund' },
            },
          ],
        };
      return `triage: ${last.content}`;
    },
    { name: 'triage-model' },
  );
  const refundsModel = new ScriptedModel(
    (request): ScriptedReply => {
      const last = lastMessage(request);
      if (last.role === 'user' && /thanks/i.test(last.content))
        return {
          toolCalls: [{ id: `b${request.messages.length}`, name: 'handoff_to_triage', args: { input: 'Refund done' } }],
        };
      if (last.role === 'tool') return 'refunds: I can refund order 42.';
      return `refunds: ${last.content}`;
    },
    { name: 'refunds-model' },
  );
  const triage = app.agent({
    name: 'triage',
    model: triageModel,
    instructions: 'You triage.',
    handoffs: [{ agent: 'refunds', history }],
  });
  app.agent({ name: 'refunds', model: refundsModel, instructions: 'You do refunds.', handoffs: [{ agent: 'triage' }] });
  return { app, triage, triageModel, refundsModel };
}

describe('handoffs', () => {
  it('hands the conversation to refunds in the same turn, keeps it there, and gets it back', async () => {
    const { app, triage, triageModel, refundsModel } = build();
    const session = triage.session('t1');

    const first = await session.send('I want a refund for order 42');
    expect(first.status).toBe('completed');
    expect(first.reply).toBe('refunds: I can refund order 42.');
    expect(session.activeAgent).toBe('refunds');
    expect(refundsModel.calls[0]!.messages[0]).toMatchObject({ role: 'system', content: 'You do refunds.' });
    expect(first.toolCalls.map((c) => [c.tool, c.ok])).toEqual([['handoff_to_refunds', true]]);
    // Each agent's model calls are its own in the turn's usage.
    expect(first.usage.byAgent).toEqual({
      triage: first.usage.byModel['triage-model'],
      refunds: first.usage.byModel['refunds-model'],
    });
    expect(first.usage.totalTokens).toBe(
      first.usage.byModel['triage-model']!.totalTokens + first.usage.byModel['refunds-model']!.totalTokens,
    );

    const second = await session.send('How long will it take?');
    expect(second.reply).toBe('refunds: How long will it take?');
    expect(triageModel.callCount).toBe(1);

    const third = await session.send('Thanks, that is all');
    expect(session.activeAgent).toBe('triage');
    expect(third.reply).toMatch(/^triage: /);
    const fourth = await session.send('Hello again');
    expect(fourth.reply).toBe('triage: Hello again');
    await app.stop();
  });

  it('keeps the active agent in the store: another app on the same store continues with it', async () => {
    const store = new MemoryStore();
    const one = build(store);
    await one.triage.session('t2').send('refund please');
    await one.app.stop();

    const two = build(store);
    const reply = await two.triage.session('t2').send('Are you still there?');
    expect(reply.reply).toBe('refunds: Are you still there?');
    expect(two.triageModel.callCount).toBe(0);
    await two.app.stop();
  });

  it('shows the new agent only what the history filter keeps of the conversation before the handoff', async () => {
    const { app, triage, refundsModel } = build(new MemoryStore(), () => []);
    const session = triage.session('t3');
    await session.send('My name is Ada');
    await session.send('refund for order 42');
    await session.send('and the other order?');
    const seen = userTexts(refundsModel.calls.at(-1)!);
    expect(seen).toEqual(['refund for order 42', 'and the other order?']);
    await app.stop();
  });

  it('parks a handoff that agent.delegating suspends; approved, the new agent answers in the resumed turn', async () => {
    @Plugin({ name: 'handoff-approval', version: '1.0.0' })
    class HandoffApproval {
      @Hook('agent.delegating')
      ask(payload: DelegatingPayload) {
        return payload.kind === 'handoff' ? suspend({ message: `Hand over to ${payload.to}?` }) : undefined;
      }
    }
    const { app, triage, triageModel, refundsModel } = build();
    await app.install(HandoffApproval);
    const session = triage.session('t6');
    const parked = await session.send('refund for order 44');
    expect(parked.status).toBe('suspended');
    expect(session.activeAgent).toBe('triage');
    expect(refundsModel.callCount).toBe(0);
    const callId = parked.suspended![0]!.callId;

    const resumed = await session.resume({ decisions: [{ callId, decision: 'approve' }] });
    expect(resumed.reply).toBe('refunds: I can refund order 42.');
    expect(session.activeAgent).toBe('refunds');
    expect(triageModel.callCount).toBe(1);
    await app.stop();
  });

  it('asks agent.delegating first and reports through agent.delegated', async () => {
    const seen: DelegatingPayload[] = [];
    const reported: DelegatedPayload[] = [];
    let closed = false;
    @Plugin({ name: 'desk-policy', version: '1.0.0' })
    class DeskPolicy {
      @Hook('agent.delegating')
      gate(payload: DelegatingPayload) {
        seen.push(payload);
        return closed && payload.kind === 'handoff' ? block('refunds are closed') : undefined;
      }
      @Hook('agent.delegated')
      record(payload: DelegatedPayload) {
        reported.push(payload);
      }
    }
    const { app, triage } = build();
    await app.install(DeskPolicy);
    await triage.session('t4').send('refund for order 42');
    expect(seen).toEqual([
      expect.objectContaining({ kind: 'handoff', from: 'triage', to: 'refunds', path: ['triage'] }),
    ]);
    expect(reported).toEqual([
      expect.objectContaining({ kind: 'handoff', from: 'triage', to: 'refunds', status: 'handed_off' }),
    ]);

    closed = true;
    const session = triage.session('t5');
    const refused = await session.send('refund for order 43');
    expect(refused.status).toBe('blocked');
    expect(session.activeAgent).toBe('triage');
    expect(reported).toHaveLength(1);
    await app.stop();
  });
});
