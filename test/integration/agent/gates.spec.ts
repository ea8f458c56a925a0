import 'reflect-metadata';
import { IsInt } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  Requires,
  ScriptedModel,
  block,
  suspend,
  setResult,
  done,
  type ToolCallInfo,
  type HookContext,
  type ToolContext,
  type ChatMessage,
  type ScriptedReply,
} from '../../../index.js';
import { BuiltInActions, type HookResult } from '../../../plugin.js';

class OpInput {
  @IsInt() n!: number;
}

/** Which `n` each run of the tool got, in order. */
let ran: number[] = [];
let rule: (n: number) => HookResult | undefined = () => undefined;

@Plugin({ name: 'g', version: '1.0.0' })
class GatedPlugin {
  @Tool({ name: 'g.op', description: 'Does operation n. Tests only.', input: OpInput })
  op(input: OpInput, _ctx: ToolContext) {
    ran.push(input.n);
    if (input.n === 0) return done('finished by op 0');
    return `did ${input.n}`;
  }
  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return rule((call.args as { n: number }).n);
  }
}

const calls = (...ns: number[]): ScriptedReply => ({
  toolCalls: ns.map((n) => ({ name: 'g.op', args: { n }, id: `c${n}` })),
});

async function setup(script: ScriptedReply[], toolConcurrency = 4) {
  const app = Trellis.create();
  await app.install(GatedPlugin);
  const model = new ScriptedModel(script);
  const session = app.agent({ name: 'g', model, instructions: 'x', toolConcurrency }).session('s');
  return { app, model, session };
}

function toolContents(messages: readonly ChatMessage[]): Record<string, string> {
  return Object.fromEntries(messages.filter((m) => m.role === 'tool').map((m) => [m.toolCallId!, m.content]));
}

const code = (content: string | undefined) => (JSON.parse(content ?? '{}') as { error?: { code: string } }).error?.code;

beforeEach(() => {
  ran = [];
  rule = () => undefined;
});

describe('Block', () => {
  it("ends the turn 'blocked'; the calls not yet run get an Interrupted result", async () => {
    rule = (n) => (n === 2 ? block('n=2 is forbidden') : undefined);
    const { model, session } = await setup([calls(1, 2, 3), 'never asked'], 1);

    const result = await session.send('go');

    expect(result.status).toBe('blocked');
    expect(result.error).toMatchObject({ code: 'Blocked', message: expect.stringContaining('n=2 is forbidden') });
    expect(ran).toEqual([1]);
    expect(model.calls).toHaveLength(1);
    const contents = toolContents(session.transcript);
    expect(contents.c1).toBe('did 1');
    expect(code(contents.c2)).toBe('Blocked');
    expect(code(contents.c3)).toBe('Interrupted');
  });
});

describe('SetResult', () => {
  it('answers the call without running the tool', async () => {
    rule = (n) => (n === 1 ? setResult('from cache') : undefined);
    const { model, session } = await setup([calls(1, 2), 'ok']);

    const result = await session.send('go');

    expect(result.status).toBe('completed');
    expect(ran).toEqual([2]);
    expect(toolContents(model.calls[1]!.messages)).toEqual({ c1: 'from cache', c2: 'did 2' });
  });
});

describe('Suspend and resume', () => {
  it('parks one call while the other runs; the turn ends suspended with the ticket', async () => {
    rule = (n) => (n === 1 ? suspend({ message: 'Approve op 1?' }) : undefined);
    const { model, session } = await setup([calls(1, 2), 'both done']);

    const result = await session.send('go');

    expect(result.status).toBe('suspended');
    expect(result.suspended).toEqual([
      { callId: 'c1', tool: 'g.op', arguments: '{"n":1}', ticket: { message: 'Approve op 1?' } },
    ]);
    expect(ran).toEqual([2]);
    expect(model.calls).toHaveLength(1);
    expect(session.suspended).toBe(true);
    expect(session.transcript).toEqual([]);
    // What the waiting call came from, for a client to show before the decision; committed with the turn.
    expect(session.pendingMessages).toEqual([
      { role: 'user', content: 'go' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [expect.objectContaining({ id: 'c1' }), expect.objectContaining({ id: 'c2' })],
      },
      { role: 'tool', toolCallId: 'c2', name: 'g.op', content: 'did 2' },
    ]);
    await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });
    expect(session.pendingMessages).toEqual([]);
  });

  it('approve runs the parked call exactly once and continues the turn; results in call order', async () => {
    rule = (n) => (n === 1 ? suspend('Approve op 1?') : undefined);
    const { model, session } = await setup([calls(1, 2), 'both done']);
    await session.send('go');

    const result = await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('both done');
    expect(ran).toEqual([2, 1]);
    const toolMessages = model.calls[1]!.messages.filter((m) => m.role === 'tool');
    expect(toolMessages.map((m) => [m.toolCallId, m.content])).toEqual([
      ['c1', 'did 1'],
      ['c2', 'did 2'],
    ]);
    expect(session.suspended).toBe(false);
    expect(session.transcript.map((m) => m.role)).toEqual(['user', 'assistant', 'tool', 'tool', 'assistant']);
  });

  it('a resume streams its own turn, round and tool events', async () => {
    rule = (n) => (n === 1 ? suspend('Approve op 1?') : undefined);
    const { session } = await setup([calls(1), 'done']);
    await session.send('go');
    const types: string[] = [];
    session.events$.subscribe((e) => types.push(e.type));

    await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });

    expect(types.filter((t) => t !== 'model.delta')).toEqual([
      'turn.started',
      'tool.started',
      'tool.finished',
      'round.started',
      'round.finished',
      'turn.finished',
    ]);
  });

  it('reject never runs the call, and the model sees Rejected with the message', async () => {
    rule = (n) => (n === 1 ? suspend('Approve op 1?') : undefined);
    const { model, session } = await setup([calls(1, 2), 'understood']);
    await session.send('go');

    const result = await session.resume({ decisions: [{ callId: 'c1', decision: 'reject', message: 'Not today' }] });

    expect(result.status).toBe('completed');
    expect(ran).toEqual([2]);
    const seen = JSON.parse(toolContents(model.calls[1]!.messages).c1!) as { error: { code: string; message: string } };
    expect(seen.error).toMatchObject({ code: 'Rejected', message: 'Not today' });
  });

  it('edit runs the call with the new arguments', async () => {
    rule = (n) => (n === 1 ? suspend('Approve op 1?') : undefined);
    const { model, session } = await setup([calls(1), 'ok']);
    await session.send('go');

    await session.resume({ decisions: [{ callId: 'c1', decision: 'edit', args: { n: 9 } }] });

    expect(ran).toEqual([9]);
    expect(toolContents(model.calls[1]!.messages).c1).toBe('did 9');
  });

  it('a partial resume runs what was decided and keeps waiting for the rest; a repeated decision changes nothing', async () => {
    rule = (n) => suspend(`Approve op ${n}?`);
    const { model, session } = await setup([calls(1, 2), 'both done']);
    await session.send('go');

    const first = await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });
    expect(first.status).toBe('suspended');
    expect(first.suspended!.map((p) => p.callId)).toEqual(['c2']);
    expect(ran).toEqual([1]);
    expect(model.calls).toHaveLength(1);

    // c1 again (already applied) alongside the decision still missing.
    const second = await session.resume({
      decisions: [
        { callId: 'c1', decision: 'approve' },
        { callId: 'c2', decision: 'approve' },
      ],
    });
    expect(second.status).toBe('completed');
    expect(ran).toEqual([1, 2]);
    expect(toolContents(model.calls[1]!.messages)).toEqual({ c1: 'did 1', c2: 'did 2' });

    await expect(session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });
    expect(ran).toEqual([1, 2]);
  });

  it('a repeated decision alone leaves the turn suspended and runs nothing', async () => {
    rule = (n) => suspend(`Approve op ${n}?`);
    const { session } = await setup([calls(1, 2), 'both done']);
    await session.send('go');
    await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });

    const again = await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });

    expect(again.status).toBe('suspended');
    expect(again.suspended!.map((p) => p.callId)).toEqual(['c2']);
    expect(ran).toEqual([1]);
  });

  it('refuses a decision the ticket does not allow, and runs nothing', async () => {
    rule = () => suspend({ message: 'Approve?', allowedDecisions: ['approve', 'reject'] });
    const { session } = await setup([calls(1), 'ok']);
    await session.send('go');

    await expect(
      session.resume({ decisions: [{ callId: 'c1', decision: 'edit', args: { n: 5 } }] }),
    ).rejects.toMatchObject({ code: 'InvalidDecision' });
    expect(ran).toEqual([]);
    expect(session.suspended).toBe(true);
    // Still decidable with an allowed decision.
    const result = await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });
    expect(result.status).toBe('completed');
    expect(ran).toEqual([1]);
  });

  it('refuses a decision on a call that is not waiting', async () => {
    rule = () => suspend('Approve?');
    const { session } = await setup([calls(1), 'ok']);
    await session.send('go');
    await expect(session.resume({ decisions: [{ callId: 'c7', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });
    expect(ran).toEqual([]);
  });

  it('a new plain send while suspended cancels the parked calls; the transcript says so', async () => {
    rule = (n) => (n === 1 ? suspend('Approve op 1?') : undefined);
    const { model, session } = await setup([calls(1, 2), 'fresh answer']);
    await session.send('go');

    const result = await session.send('never mind');

    expect(result.status).toBe('completed');
    expect(ran).toEqual([2]);
    expect(session.suspended).toBe(false);
    const contents = toolContents(session.transcript);
    expect(code(contents.c1)).toBe('Cancelled');
    expect(contents.c1).toMatch(/cancel/i);
    expect(contents.c2).toBe('did 2');
    // The model's next request is well formed: every tool call has its tool message.
    const roles = model.calls[1]!.messages.map((m) => m.role);
    expect(roles).toEqual(['system', 'user', 'assistant', 'tool', 'tool', 'user']);
    await expect(session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] })).rejects.toMatchObject({
      code: 'InvalidDecision',
    });
    expect(ran).toEqual([2]);
  });

  it('a resumed turn keeps its turn-level context: context messages, overrides and <tool>.result', async () => {
    rule = (n) => (n === 1 ? suspend('Approve op 1?') : undefined);
    const seen: unknown[] = [];
    @Plugin({ name: 'ctxp', version: '1.0.0' })
    class ContextPlugin {
      @Hook('planning.started') plan(instructions: string, ctx: HookContext) {
        ctx.schedule(BuiltInActions.AddContextMessage, 'Be brief.');
        ctx.schedule(BuiltInActions.SetInferenceOverride, { temperature: 0.3 });
        return instructions;
      }
      @Hook('memory.read')
      @Requires({ key: 'g.op.result', optional: true })
      recall(_p: unknown, ctx: HookContext) {
        const last = ctx.get<{ callId: string }[]>('trellis.last_tool_results');
        seen.push([ctx.deps['g.op.result'], last?.map((r) => r.callId)]);
      }
    }
    const app = Trellis.create();
    await app.install(GatedPlugin);
    await app.install(ContextPlugin);
    const model = new ScriptedModel([calls(2, 1), 'done']);
    const session = app.agent({ name: 'g', model, instructions: 'x', toolConcurrency: 1 }).session('s');
    await session.send('go');

    await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });

    expect(model.calls[1]!.messages.slice(0, 2).map((m) => m.content)).toEqual(['x', 'Be brief.']);
    expect(model.calls[1]!.inference).toEqual({ temperature: 0.3 });
    // c2 ran before the suspension, c1 after the resume: both are in the restored turn.
    expect(seen).toEqual([
      [undefined, undefined],
      ['did 1', ['c2', 'c1']],
    ]);
  });

  it('a done(...) from a call that ran before the others were decided still ends the turn', async () => {
    rule = (n) => (n === 1 ? suspend('Approve op 1?') : undefined);
    const { model, session } = await setup([calls(1, 0), 'never asked']);
    const first = await session.send('go');
    expect(first.status).toBe('suspended');

    const result = await session.resume({ decisions: [{ callId: 'c1', decision: 'approve' }] });

    expect(result).toMatchObject({ status: 'completed', reply: 'finished by op 0' });
    expect(model.calls).toHaveLength(1);
    expect(ran).toEqual([0, 1]);
  });
});
