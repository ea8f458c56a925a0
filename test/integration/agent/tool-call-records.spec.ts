import 'reflect-metadata';
import { IsInt } from 'class-validator';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  Tool,
  Trellis,
  done,
  suspend,
  type ScriptedReply,
  type ToolCallInfo,
  type ToolCallRecord,
} from '../../../index.js';

/**
 * `TurnResult.toolCalls` and the suspension record's calls, as a host reads them: the turn
 * keeps its finished calls in a compact form of its own (`FinishedCalls`) and builds these
 * records where they are read, so they are pinned here field by field and key by key.
 */
class OpInput {
  @IsInt() n!: number;
}

let suspendOn = -1;

@Plugin({ name: 'r', version: '1.0.0' })
class RecordsPlugin {
  @Tool({ name: 'r.op', description: 'Does operation n. Tests only.', input: OpInput })
  op(input: OpInput) {
    if (input.n === 0) return done({ finished: true });
    if (input.n === 13) throw new Error('unlucky');
    return input.n % 2 === 0 ? { n: input.n } : `did ${input.n}`;
  }

  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return (call.args as { n: number }).n === suspendOn ? suspend('Approve?') : undefined;
  }
}

const call = (id: string, n: number) => ({ id, name: 'r.op', args: { n } });
const calls = (...list: { id: string; name: string; args: unknown }[]): ScriptedReply => ({ toolCalls: list });
const okKeys = ['callId', 'tool', 'round', 'ok', 'value', 'durationMs'];
const errorKeys = ['callId', 'tool', 'round', 'ok', 'error', 'durationMs'];

/** A record with its duration checked and left out, for comparing the rest. */
function timed(record: ToolCallRecord): Omit<ToolCallRecord, 'durationMs'> {
  expect(typeof record.durationMs).toBe('number');
  expect(record.durationMs).toBeGreaterThanOrEqual(0);
  const { durationMs: _duration, ...rest } = record;
  return rest;
}

async function setup(script: ScriptedReply[], store?: MemoryStore) {
  const app = Trellis.create(store ? { store } : {});
  await app.install(RecordsPlugin);
  const model = new ScriptedModel(script);
  const agent = app.agent({ name: 'r', model, instructions: 'x' });
  return { app, model, agent };
}

beforeEach(() => {
  suspendOn = -1;
});

describe('the records of a turn’s tool calls', () => {
  it('lists ok, failed, unknown-tool and done calls in the order they finished, with their rounds and keys', async () => {
    const { agent } = await setup([
      calls(call('c1', 1)),
      calls(call('c2', 2), call('c13', 13)),
      calls({ id: 'cx', name: 'r.nope', args: {} }),
      calls(call('c0', 0)),
    ]);

    const result = await agent.session('s').send('go');

    expect(result.status).toBe('completed');
    expect(result.reply).toBe('{"finished":true}');
    expect(result.toolCalls.map(timed)).toStrictEqual([
      { callId: 'c1', tool: 'r.op', round: 1, ok: true, value: 'did 1' },
      { callId: 'c2', tool: 'r.op', round: 2, ok: true, value: { n: 2 } },
      {
        callId: 'c13',
        tool: 'r.op',
        round: 2,
        ok: false,
        error: { code: 'ToolFailed', message: 'r.op failed: unlucky', retryable: false },
      },
      { callId: 'cx', tool: 'r.nope', round: 3, ok: false, error: expect.objectContaining({ code: 'ToolNotFound' }) },
      { callId: 'c0', tool: 'r.op', round: 4, ok: true, value: { finished: true } },
    ]);
    expect(result.toolCalls.map((r) => Object.keys(r))).toEqual([okKeys, okKeys, errorKeys, errorKeys, okKeys]);
  });

  it('a suspended turn keeps its finished calls in its record, and the resumed turn lists them before its own', async () => {
    suspendOn = 3;
    const store = new MemoryStore();
    const { agent } = await setup([calls(call('c1', 1)), calls(call('c2', 2), call('c3', 3)), 'all done'], store);

    const suspended = await agent.session('s').send('go');

    expect(suspended.status).toBe('suspended');
    const first = [
      { callId: 'c1', tool: 'r.op', round: 1, ok: true, value: 'did 1' },
      { callId: 'c2', tool: 'r.op', round: 2, ok: true, value: { n: 2 } },
    ];
    expect(suspended.toolCalls.map(timed)).toStrictEqual(first);
    const stored = (await store.load('s'))!.suspension as { toolCalls: ToolCallRecord[] };
    expect(stored.toolCalls).toStrictEqual(suspended.toolCalls);
    expect(stored.toolCalls.map((r) => Object.keys(r))).toEqual([okKeys, okKeys]);

    // Another app on the same store resumes it: the records come back from the stored one.
    const other = await setup(['all done'], store);
    const resumed = await other.agent.session('s').resume({ decisions: [{ callId: 'c3', decision: 'approve' }] });

    expect(resumed.status).toBe('completed');
    expect(resumed.toolCalls.slice(0, 2)).toStrictEqual(suspended.toolCalls);
    expect(resumed.toolCalls.map(timed)).toStrictEqual([
      ...first,
      { callId: 'c3', tool: 'r.op', round: 2, ok: true, value: 'did 3' },
    ]);
  });

  it('a rejected call is recorded as the rejection, after the calls that ran', async () => {
    suspendOn = 3;
    const { agent } = await setup([calls(call('c1', 1), call('c3', 3)), 'all done']);
    const session = agent.session('s');
    await session.send('go');

    const resumed = await session.resume({ decisions: [{ callId: 'c3', decision: 'reject' }] });

    expect(resumed.toolCalls).toStrictEqual([
      { callId: 'c1', tool: 'r.op', round: 1, ok: true, value: 'did 1', durationMs: expect.any(Number) },
      {
        callId: 'c3',
        tool: 'r.op',
        round: 1,
        ok: false,
        error: expect.objectContaining({ code: 'Rejected' }),
        durationMs: 0,
      },
    ]);
  });

  it('a call to a sub-agent keeps its usage on its record, and the turn rolls it up', async () => {
    const app = Trellis.create();
    await app.install(RecordsPlugin);
    app.agent({
      name: 'helper',
      model: new ScriptedModel([{ text: 'helped', usage: { inputTokens: 3, outputTokens: 2, totalTokens: 5 } }]),
      instructions: 'Help.',
    });
    const lead = app.agent({
      name: 'lead',
      model: new ScriptedModel([
        calls(call('c1', 1), { id: 'ask', name: 'ask_helper', args: { input: 'help?' } }),
        'thanks',
      ]),
      instructions: 'Lead.',
      agents: [{ agent: 'helper', name: 'ask_helper', description: 'Ask the helper. Tests only.' }],
    });

    const result = await lead.session('s').send('go');

    expect(result.toolCalls.map((r) => r.callId)).toEqual(['c1', 'ask']);
    const delegated = result.toolCalls[1]!;
    expect(Object.keys(delegated)).toEqual([...okKeys, 'usage']);
    expect(delegated.value).toBe('helped');
    expect(delegated.usage).toEqual({
      inputTokens: 3,
      outputTokens: 2,
      totalTokens: 5,
      byModel: expect.any(Object),
      byAgent: { helper: { inputTokens: 3, outputTokens: 2, totalTokens: 5 } },
    });
    expect(result.usage.byAgent?.helper).toEqual({ inputTokens: 3, outputTokens: 2, totalTokens: 5 });
  });
});
