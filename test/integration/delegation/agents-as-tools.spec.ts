import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  Hook,
  Plugin,
  Requires,
  ScriptedModel,
  Tool,
  Trellis,
  block,
  type ModelRequest,
  type ScriptedReply,
  type ToolContext,
  type TrellisEvent,
} from '../../../index.js';
import type { DelegatedPayload, DelegatingPayload } from '../../../plugin.js';

const lastTool = (request: ModelRequest) => request.messages.filter((m) => m.role === 'tool');
const userText = (request: ModelRequest) => request.messages.filter((m) => m.role === 'user').map((m) => m.content);

/** A sub-agent's model: answers its one question after `delayMs`, recording when it ran. */
function answering(name: string, log: string[], delayMs = 0) {
  return new ScriptedModel(
    async (request): Promise<ScriptedReply> => {
      log.push(`${name}:start`);
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      log.push(`${name}:end`);
      return {
        text: `${name} says: ${userText(request).at(-1)}`,
        usage: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      };
    },
    { name: `${name}-model` },
  );
}

class WhoInput {
  @IsString() input!: string;
}

@Plugin({ name: 'who', version: '1.0.0' })
class WhoPlugin {
  @Tool({ name: 'who.am_i', description: 'Tells the user id. Tests only.', input: WhoInput })
  @Requires({ key: 'app.user_id', optional: true }, { key: 'app.secret', optional: true })
  whoAmI(_input: WhoInput, ctx: ToolContext) {
    return JSON.stringify({ user: ctx.deps['app.user_id'] ?? null, secret: ctx.deps['app.secret'] ?? null });
  }
}

describe('an agent used as a tool', () => {
  it('runs two sub-agents concurrently, each in a child session of its own, and rolls their usage up', async () => {
    const app = Trellis.create();
    const log: string[] = [];
    const billing = app.agent({
      name: 'billing',
      model: answering('billing', log, 60),
      instructions: 'You answer billing questions.',
    });
    app.agent({
      name: 'shipping',
      model: answering('shipping', log, 60),
      instructions: 'You answer shipping questions.',
    });
    const orchestratorModel = new ScriptedModel(
      (request): ScriptedReply => {
        const tools = lastTool(request);
        if (tools.length === 0) {
          return {
            toolCalls: [
              { id: 'c_bill', name: 'ask_billing', args: { input: 'invoice 7?' } },
              { id: 'c_ship', name: 'ask_shipping', args: { input: 'parcel 9?' } },
            ],
            usage: { inputTokens: 100, outputTokens: 20, totalTokens: 120 },
          };
        }
        return {
          text: tools.map((t) => t.content).join(' | '),
          usage: { inputTokens: 200, outputTokens: 30, totalTokens: 230 },
        };
      },
      { name: 'orchestrator-model' },
    );
    const orchestrator = app.agent({
      name: 'orchestrator',
      model: orchestratorModel,
      instructions: 'Route questions.',
      agents: [
        { agent: 'billing', name: 'ask_billing', description: 'Ask the billing agent. Tests only.' },
        { agent: 'shipping', name: 'ask_shipping', description: 'Ask the shipping agent. Tests only.' },
      ],
    });
    const events: TrellisEvent[] = [];
    app.events$.subscribe((e) => events.push(e));

    const result = await orchestrator.session('o1').send('Where are my invoice and my parcel?');

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('billing says: invoice 7? | shipping says: parcel 9?');
    // Concurrent: both started before either ended.
    expect(log.slice(0, 2).sort()).toEqual(['billing:start', 'shipping:start']);
    // Usage: the orchestrator's own calls plus each sub-agent's, with a per-agent breakdown.
    expect(result.usage.totalTokens).toBe(120 + 230 + 15 + 15);
    expect(result.usage.byAgent).toEqual({
      orchestrator: { inputTokens: 300, outputTokens: 50, totalTokens: 350 },
      billing: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
      shipping: { inputTokens: 10, outputTokens: 5, totalTokens: 15 },
    });
    expect(result.usage.byModel['billing-model']).toEqual({ inputTokens: 10, outputTokens: 5, totalTokens: 15 });
    expect(result.toolCalls.map((c) => [c.callId, c.ok, c.usage?.totalTokens])).toEqual([
      ['c_bill', true, 15],
      ['c_ship', true, 15],
    ]);
    const childStarts = events.filter(
      (e): e is Extract<TrellisEvent, { type: 'turn.started' }> => e.type === 'turn.started' && e.parent !== undefined,
    );
    expect(childStarts.map((e) => [e.agent, e.parent])).toEqual(
      expect.arrayContaining([
        ['billing', { sessionId: 'o1', callId: 'c_bill' }],
        ['shipping', { sessionId: 'o1', callId: 'c_ship' }],
      ]),
    );
    // Events nest: the child's turn starts after its caller's tool call started, and ends before it finished.
    const at = (pred: (e: TrellisEvent) => boolean) => events.findIndex(pred);
    const billingChild = childStarts.find((e) => e.agent === 'billing')!.sessionId;
    // The sub-agent had its own transcript: its question and its answer, nothing of the orchestrator's.
    expect(billing.session(billingChild).transcript.map((m) => m.content)).toEqual([
      'invoice 7?',
      'billing says: invoice 7?',
    ]);
    expect(at((e) => e.type === 'tool.started' && e.callId === 'c_bill')).toBeLessThan(
      at((e) => e.type === 'turn.started' && e.sessionId === billingChild),
    );
    expect(at((e) => e.type === 'turn.finished' && e.sessionId === billingChild)).toBeLessThan(
      at((e) => e.type === 'tool.finished' && e.callId === 'c_bill'),
    );
    await app.stop();
  });

  it('gives the sub-agent its own transcript and only the context keys it declares', async () => {
    const app = Trellis.create();
    await app.install(WhoPlugin);
    const childModel = new ScriptedModel((request): ScriptedReply => {
      if (lastTool(request).length === 0) return { toolCalls: [{ id: 'w1', name: 'who.am_i', args: { input: '' } }] };
      return lastTool(request).at(-1)!.content;
    });
    app.agent({ name: 'helper', model: childModel, instructions: 'Help.', plugins: ['who'] });
    const parentModel = new ScriptedModel((request): ScriptedReply => {
      if (lastTool(request).length === 0)
        return { toolCalls: [{ id: 'p1', name: 'ask_helper', args: { input: 'who is this?' } }] };
      return `helper said ${lastTool(request)[0]!.content}`;
    });
    const parent = app.agent({
      name: 'front',
      model: parentModel,
      instructions: 'Front desk.',
      plugins: [],
      agents: [
        { agent: 'helper', name: 'ask_helper', description: 'Ask the helper. Tests only.', context: ['app.user_id'] },
      ],
    });

    const result = await parent
      .session('f1', { context: { 'app.user_id': 'u-42', 'app.secret': 'hunter2' } })
      .send('Earlier message that the helper must not see');

    expect(result.reply).toBe('helper said {"user":"u-42","secret":null}');
    const seen = childModel.calls[0]!.messages;
    expect(seen.filter((m) => m.role !== 'system').map((m) => m.content)).toEqual(['who is this?']);
    expect(JSON.stringify(seen)).not.toContain('Earlier message');
    await app.stop();
  });

  it('turns a structured reply into the tool result when the agent tool has an output DTO', async () => {
    class Verdict {
      @IsString() verdict!: string;
    }
    const app = Trellis.create();
    app.agent({
      name: 'judge',
      model: new ScriptedModel(['```json\n{"verdict":"refund"}\n```']),
      instructions: 'Reply in JSON.',
    });
    const parentModel = new ScriptedModel((request): ScriptedReply => {
      if (lastTool(request).length === 0)
        return { toolCalls: [{ id: 'j1', name: 'ask_judge', args: { input: 'refund?' } }] };
      return 'ok';
    });
    const parent = app.agent({
      name: 'clerk',
      model: parentModel,
      instructions: 'x',
      agents: [{ agent: 'judge', name: 'ask_judge', description: 'Ask the judge. Tests only.', output: Verdict }],
    });
    const result = await parent.session('c1').send('decide');
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: { verdict: 'refund' } });
    await app.stop();
  });

  it('refuses a loop (A → B → A) and a delegation deeper than allowed, before the sub-agent runs', async () => {
    const app = Trellis.create();
    const aModel = new ScriptedModel((request): ScriptedReply => {
      if (lastTool(request).length === 0) return { toolCalls: [{ id: 'a1', name: 'ask_b', args: { input: 'go' } }] };
      return `a: ${lastTool(request)[0]!.content}`;
    });
    const bModel = new ScriptedModel((request): ScriptedReply => {
      if (lastTool(request).length === 0)
        return { toolCalls: [{ id: 'b1', name: 'ask_a', args: { input: 'back to you' } }] };
      return `b got ${lastTool(request)[0]!.content}`;
    });
    const a = app.agent({
      name: 'a',
      model: aModel,
      instructions: 'x',
      agents: [{ agent: 'b', name: 'ask_b', description: 'Ask b. Tests only.' }],
    });
    app.agent({
      name: 'b',
      model: bModel,
      instructions: 'x',
      agents: [{ agent: 'a', name: 'ask_a', description: 'Ask a. Tests only.' }],
    });

    const result = await a.session('loop').send('start');

    expect(result.status).toBe('completed');
    expect(aModel.callCount).toBe(2); // its own two rounds; never a third run inside b
    const inner = JSON.parse(JSON.parse(JSON.stringify(result.reply!.slice(3))).replace(/^b got /, '')) as {
      error: { code: string; message: string };
    };
    expect(inner.error.code).toBe('DelegationLoop');
    expect(inner.error.message).toContain('a → b → a');

    const deep = Trellis.create();
    deep.agent({ name: 'leaf', model: new ScriptedModel(['leaf answer']), instructions: 'x' });
    const midModel = new ScriptedModel((request): ScriptedReply =>
      lastTool(request).length === 0
        ? { toolCalls: [{ id: 'm1', name: 'ask_leaf', args: { input: 'q' } }] }
        : lastTool(request)[0]!.content,
    );
    deep.agent({
      name: 'mid',
      model: midModel,
      instructions: 'x',
      maxDelegationDepth: 1,
      agents: [{ agent: 'leaf', name: 'ask_leaf', description: 'Ask leaf. Tests only.' }],
    });
    const topModel = new ScriptedModel((request): ScriptedReply =>
      lastTool(request).length === 0
        ? { toolCalls: [{ id: 't1', name: 'ask_mid', args: { input: 'q' } }] }
        : lastTool(request)[0]!.content,
    );
    const top = deep.agent({
      name: 'top',
      model: topModel,
      instructions: 'x',
      agents: [{ agent: 'mid', name: 'ask_mid', description: 'Ask mid. Tests only.' }],
    });
    const refused = await top.session('deep').send('q');
    expect(refused.reply).toContain('DelegationDepth');
    expect(refused.reply).toContain('top → mid → leaf');
    await app.stop();
    await deep.stop();
  });

  it('takes the smallest maxDelegationDepth along the path: a limit on the top agent holds below it', async () => {
    const app = Trellis.create();
    const leafModel = new ScriptedModel(['leaf answer']);
    app.agent({ name: 'leaf', model: leafModel, instructions: 'x' });
    const relay = (tool: string) =>
      new ScriptedModel((request): ScriptedReply =>
        lastTool(request).length === 0
          ? { toolCalls: [{ id: `c_${tool}`, name: tool, args: { input: 'q' } }] }
          : lastTool(request)[0]!.content,
      );
    // mid allows the default (3); top allows 1: top → mid is one deep, mid → leaf would be two.
    app.agent({
      name: 'mid',
      model: relay('ask_leaf'),
      instructions: 'x',
      agents: [{ agent: 'leaf', name: 'ask_leaf', description: 'Ask leaf. Tests only.' }],
    });
    const top = app.agent({
      name: 'top',
      model: relay('ask_mid'),
      instructions: 'x',
      maxDelegationDepth: 1,
      agents: [{ agent: 'mid', name: 'ask_mid', description: 'Ask mid. Tests only.' }],
    });

    const result = await top.session('limited').send('q');

    expect(result.reply).toContain('DelegationDepth');
    expect(result.reply).toContain("top → mid → leaf would nest 2 sub-agents deep; 'top' allows 1");
    expect(leafModel.callCount).toBe(0);
    // The limit is the top's only inside its turns: mid called on its own still reaches leaf.
    const direct = await app
      .agent({
        name: 'mid',
        model: relay('ask_leaf'),
        instructions: 'x',
        agents: [{ agent: 'leaf', name: 'ask_leaf', description: 'Ask leaf. Tests only.' }],
      })
      .session('direct')
      .send('q');
    expect(direct.reply).toBe('leaf answer');
    await app.stop();
  });

  it('ignores a delegation frame an application passes to send(): only the kernel places a turn in a chain', async () => {
    const app = Trellis.create();
    app.agent({ name: 'leaf', model: new ScriptedModel(['leaf answer']), instructions: 'x' });
    const topModel = new ScriptedModel((request): ScriptedReply =>
      lastTool(request).length === 0
        ? { toolCalls: [{ id: 't1', name: 'ask_leaf', args: { input: 'q' } }] }
        : `top: ${lastTool(request)[0]!.content}`,
    );
    const top = app.agent({
      name: 'top',
      model: topModel,
      instructions: 'x',
      maxDelegationDepth: 1,
      agents: [{ agent: 'leaf', name: 'ask_leaf', description: 'Ask leaf. Tests only.' }],
    });
    const started: TrellisEvent[] = [];
    app.events$.subscribe((e) => e.type === 'turn.started' && started.push(e));
    // A frame claiming the turn already sits under `leaf`, two levels deep: honoured, it would
    // refuse the call as a loop and mark the turn as a child's.
    const forged = {
      delegation: { path: ['leaf', 'other', 'top'], parentSessionId: 'someone-else', parentCallId: 'c9' },
    } as never;

    const result = await top.session('forged').send('q', forged);

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('top: leaf answer');
    expect(started.find((e) => e.type === 'turn.started' && e.sessionId === 'forged')).not.toHaveProperty('parent');
    await app.stop();
  });

  it('refuses a malformed agents or handoffs list when the agent is created', () => {
    const app = Trellis.create();
    const create = () =>
      app.agent({
        name: 'bad',
        model: new ScriptedModel(['x']),
        instructions: 'x',
        agents: [{ agent: 'billing', name: '', description: 'd' }],
        handoffs: [{ agent: '' }],
        maxDelegationDepth: -1,
      });
    expect(create).toThrow(
      /agents\[0\] needs agent, name and description[\s\S]*handoffs\[0\] needs agent[\s\S]*maxDelegationDepth/,
    );
  });

  it('lets agent.delegating block a delegation and agent.delegated record it', async () => {
    const seen: DelegatingPayload[] = [];
    const reported: DelegatedPayload[] = [];
    @Plugin({ name: 'governor', version: '1.0.0' })
    class Governor {
      @Hook('agent.delegating')
      gate(payload: DelegatingPayload) {
        seen.push(payload);
        if (payload.to === 'forbidden') return block('not today');
        return undefined;
      }
      @Hook('agent.delegated')
      record(payload: DelegatedPayload) {
        reported.push(payload);
      }
    }
    const app = Trellis.create();
    await app.install(Governor);
    const forbiddenModel = new ScriptedModel(['should never answer']);
    app.agent({ name: 'forbidden', model: forbiddenModel, instructions: 'x' });
    app.agent({ name: 'allowed', model: new ScriptedModel(['fine']), instructions: 'x' });
    const bossModel = new ScriptedModel((request): ScriptedReply => {
      if (lastTool(request).length === 0)
        return { toolCalls: [{ id: 'k1', name: 'ask_allowed', args: { input: 'hi' } }] };
      if (lastTool(request).length === 1)
        return { toolCalls: [{ id: 'k2', name: 'ask_forbidden', args: { input: 'hi' } }] };
      return 'done';
    });
    const boss = app.agent({
      name: 'boss',
      model: bossModel,
      instructions: 'x',
      agents: [
        { agent: 'allowed', name: 'ask_allowed', description: 'Tests only.' },
        { agent: 'forbidden', name: 'ask_forbidden', description: 'Tests only.' },
      ],
    });
    const first = await boss.session('b1').send('go');
    expect(first.status).toBe('blocked');
    expect(forbiddenModel.callCount).toBe(0);
    expect(seen.map((p) => [p.kind, p.from, p.to, p.callId, p.path])).toEqual([
      ['tool', 'boss', 'allowed', 'k1', ['boss']],
      ['tool', 'boss', 'forbidden', 'k2', ['boss']],
    ]);
    expect(reported).toEqual([
      expect.objectContaining({
        kind: 'tool',
        from: 'boss',
        to: 'allowed',
        callId: 'k1',
        status: 'completed',
        childSessionId: expect.stringContaining('allowed'),
      }),
    ]);
    await app.stop();
  });
});
