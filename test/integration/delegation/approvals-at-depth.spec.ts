import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  Tool,
  Trellis,
  suspend,
  type ModelRequest,
  type ScriptedReply,
  type ToolCallInfo,
} from '../../../index.js';
import type { DelegatingPayload } from '../../../plugin.js';

class LineInput {
  @IsString() line!: string;
}

let ledger: string[] = [];

@Plugin({ name: 'ledger', version: '1.0.0' })
class LedgerPlugin {
  @Tool({ name: 'ledger.append', description: 'Appends a line. Tests only.', input: LineInput })
  append(input: LineInput) {
    ledger.push(input.line);
    return `appended ${input.line}`;
  }

  @Hook('tool.gate')
  approval(call: ToolCallInfo) {
    if (call.tool === 'ledger.append')
      return suspend({ message: `Append ${JSON.stringify(call.args)}?`, allowedDecisions: ['approve', 'reject'] });
    return undefined;
  }
}

const tools = (request: ModelRequest) => request.messages.filter((m) => m.role === 'tool');

/** top → mid → leaf; leaf asks for two appends, each parked by the gate. */
async function build(store = new MemoryStore()) {
  const app = Trellis.create({ store });
  await app.install(LedgerPlugin);
  const leafModel = new ScriptedModel((request): ScriptedReply => {
    if (tools(request).length === 0) {
      return {
        toolCalls: [
          { id: 'l_yes', name: 'ledger.append', args: { line: 'approved-line' } },
          { id: 'l_no', name: 'ledger.append', args: { line: 'rejected-line' } },
        ],
      };
    }
    return `leaf: ${tools(request)
      .map((t) => t.content)
      .join(', ')}`;
  });
  const relay = (id: string, tool: string) =>
    new ScriptedModel((request): ScriptedReply =>
      tools(request).length === 0
        ? { toolCalls: [{ id, name: tool, args: { input: 'record both lines' } }] }
        : `${id}: ${tools(request)[0]!.content}`,
    );
  const leaf = app.agent({ name: 'leaf', model: leafModel, instructions: 'Keep the ledger.', plugins: ['ledger'] });
  app.agent({
    name: 'mid',
    model: relay('m1', 'ask_leaf'),
    instructions: 'x',
    agents: [{ agent: 'leaf', name: 'ask_leaf', description: 'Tests only.' }],
  });
  const top = app.agent({
    name: 'top',
    model: relay('t1', 'ask_mid'),
    instructions: 'x',
    agents: [{ agent: 'mid', name: 'ask_mid', description: 'Tests only.' }],
  });
  return { app, top, leaf, leafModel };
}

beforeEach(() => (ledger = []));

describe('approvals inside sub-agents', () => {
  it('surfaces a call suspended two levels deep at the top, with its path, and runs it once when approved', async () => {
    const { app, top } = await build();
    const session = top.session('s1');

    const suspended = await session.send('Record both lines.');

    expect(suspended.status).toBe('suspended');
    expect(suspended.suspended?.map((p) => [p.callId, p.tool, p.path])).toEqual([
      ['t1/m1/l_yes', 'ledger.append', ['top', 'mid', 'leaf']],
      ['t1/m1/l_no', 'ledger.append', ['top', 'mid', 'leaf']],
    ]);
    expect(await session.pending()).toHaveLength(2);
    expect(ledger).toEqual([]);

    const resumed = await session.resume({
      decisions: [
        { callId: 't1/m1/l_yes', decision: 'approve' },
        { callId: 't1/m1/l_no', decision: 'reject' },
      ],
    });

    expect(resumed.status).toBe('completed');
    expect(ledger).toEqual(['approved-line']);
    expect(resumed.reply).toContain('t1: m1: leaf: appended approved-line');
    expect(resumed.reply).toContain('Rejected');
    await expect(session.resume({ decisions: [{ callId: 't1/m1/l_yes', decision: 'approve' }] })).rejects.toMatchObject(
      { code: 'InvalidDecision' },
    );
    expect(ledger).toEqual(['approved-line']);
    await app.stop();
  });

  it('keeps waiting for the undecided call after a partial resume, and applies each decision once', async () => {
    const { app, top } = await build();
    const session = top.session('s2');
    await session.send('Record both lines.');

    const partial = await session.resume({ decisions: [{ callId: 't1/m1/l_yes', decision: 'approve' }] });
    expect(partial.status).toBe('suspended');
    expect(partial.suspended?.map((p) => p.callId)).toEqual(['t1/m1/l_no']);
    expect(ledger).toEqual(['approved-line']);

    const rest = await session.resume({
      decisions: [
        { callId: 't1/m1/l_yes', decision: 'approve' },
        { callId: 't1/m1/l_no', decision: 'reject' },
      ],
    });
    expect(rest.status).toBe('completed');
    expect(ledger).toEqual(['approved-line']);
    await app.stop();
  });

  it('cancels the waiting sub-agents with the turn, so a deep call cannot be approved later in its child session', async () => {
    const store = new MemoryStore();
    const { app, top, leaf: leafAgent } = await build(store);
    const session = top.session('s5');
    await session.send('Record both lines.');
    const suspendedIds = async () =>
      (await store.list())
        .filter((s) => s.suspended)
        .map((s) => s.id)
        .sort();
    expect(await suspendedIds()).toEqual(['s5', 's5>mid:0:t1', 's5>mid:0:t1>leaf:0:m1']);

    const next = await session.send('Never mind that; something else.');

    expect(next.status).toBe('completed');
    expect(await suspendedIds()).toEqual([]);
    const leaf = await store.load('s5>mid:0:t1>leaf:0:m1');
    expect(leaf!.turns.at(-1)!.status).toBe('cancelled');
    expect(leaf!.transcript.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      expect.stringContaining('Cancelled'),
      expect.stringContaining('Cancelled'),
    ]);
    // The top session says a new message cancelled its call; the sub-agents', that it was withdrawn by their caller.
    expect((await store.load('s5'))!.transcript.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      expect.stringContaining('the user sent a new message'),
    ]);
    expect(leaf!.turns.at(-1)!.error?.message).toBe('Suspended calls were withdrawn');
    // Opened directly, the leaf's session has nothing left to approve.
    const direct = leafAgent.session('s5>mid:0:t1>leaf:0:m1');
    await expect(direct.resume({ decisions: [{ callId: 'l_yes', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });
    expect(ledger).toEqual([]);
    await app.stop();
  });

  it('cancelPending() cancels the waiting turn and its sub-agents without a new message', async () => {
    const store = new MemoryStore();
    const { app, top } = await build(store);
    const session = top.session('s6');
    await session.send('Record both lines.');

    await expect(session.cancelPending()).resolves.toBe(true);

    expect(session.suspended).toBe(false);
    expect(await session.pending()).toEqual([]);
    expect((await store.list()).filter((s) => s.suspended)).toEqual([]);
    const stored = (await store.load('s6'))!;
    expect(stored.turns.at(-1)!.status).toBe('cancelled');
    // The transcript says the calls were withdrawn, not that a message came.
    expect(stored.turns.at(-1)!.error?.message).toBe('Suspended calls were withdrawn');
    expect(stored.transcript.filter((m) => m.role === 'tool').map((m) => m.content)).toEqual([
      expect.stringContaining('the waiting calls were withdrawn'),
    ]);
    await expect(session.cancelPending()).resolves.toBe(false);
    await expect(session.resume({ decisions: [{ callId: 't1/m1/l_yes', decision: 'approve' }] })).rejects.toMatchObject(
      { code: 'InvalidDecision' },
    );
    expect(ledger).toEqual([]);
    await app.stop();
  });

  it('never runs a rejected call, and reports the rejection up the chain', async () => {
    const { app, top } = await build();
    const session = top.session('s3');
    await session.send('Record both lines.');
    const resumed = await session.resume({
      decisions: [
        { callId: 't1/m1/l_yes', decision: 'reject' },
        { callId: 't1/m1/l_no', decision: 'reject' },
      ],
    });
    expect(resumed.status).toBe('completed');
    expect(ledger).toEqual([]);
    await app.stop();
  });

  it('parks a delegation that agent.delegating suspends, and runs the sub-agent once approved', async () => {
    @Plugin({ name: 'governor', version: '1.0.0' })
    class Governor {
      @Hook('agent.delegating')
      ask(payload: DelegatingPayload) {
        return suspend({ message: `Let ${payload.from} ask ${payload.to}?` });
      }
    }
    const app = Trellis.create({ store: new MemoryStore() });
    await app.install(Governor);
    const helperModel = new ScriptedModel(['helped']);
    app.agent({ name: 'helper', model: helperModel, instructions: 'x', plugins: ['governor'] });
    const boss = app.agent({
      name: 'boss',
      model: new ScriptedModel((request): ScriptedReply =>
        tools(request).length === 0
          ? { toolCalls: [{ id: 'h1', name: 'ask_helper', args: { input: 'help' } }] }
          : `boss: ${tools(request)[0]!.content}`,
      ),
      instructions: 'x',
      agents: [{ agent: 'helper', name: 'ask_helper', description: 'Tests only.' }],
    });
    const session = boss.session('g1');
    const parked = await session.send('go');
    expect(parked.suspended?.map((p) => [p.callId, p.tool, p.ticket.message, p.path])).toEqual([
      ['h1', 'ask_helper', 'Let boss ask helper?', undefined],
    ]);
    expect(helperModel.callCount).toBe(0);
    const resumed = await session.resume({ decisions: [{ callId: 'h1', decision: 'approve' }] });
    expect(resumed.reply).toBe('boss: helped');
    expect(helperModel.callCount).toBe(1);
    await app.stop();
  });
});
