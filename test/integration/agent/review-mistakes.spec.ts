import 'reflect-metadata';
import { IsInt, Min } from 'class-validator';
import { Trellis, Plugin, Tool, Hook, suspend, TrellisError, type ToolCallInfo } from 'trellis';
import { ScriptedModel } from 'trellis/testing';

class Amount {
  @IsInt() @Min(1) units!: number;
}

@Plugin({ name: 'pay', version: '1.0.0' })
class Pay {
  runs: number[] = [];
  @Tool({ name: 'pay.send', description: 'Sends money. Use only when asked to pay.', input: Amount })
  send(input: Amount) {
    this.runs.push(input.units);
    return `sent ${input.units}`;
  }

  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return call.tool === 'pay.send' ? suspend('Send money?') : undefined;
  }
}

describe('mistakes a reviewer or an agent author makes', () => {
  it('refuses edited arguments that fail the tool input, without using up the decision', async () => {
    const app = Trellis.create();
    const pay = (await app.install(Pay)).instance;
    const model = new ScriptedModel([{ toolCalls: [{ id: 'c1', name: 'pay.send', args: { units: 5 } }] }, 'paid']);
    const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s');
    expect((await session.send('pay 5')).status).toBe('suspended');

    const error = await session
      .resume({ decisions: [{ callId: 'c1', decision: 'edit', args: { units: 0 } }] })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidDecision')).toBe(true);
    expect((error as Error).message).toContain('units');
    expect(pay.runs).toEqual([]);
    expect(session.suspended).toBe(true);

    const result = await session.resume({ decisions: [{ callId: 'c1', decision: 'edit', args: { units: 3 } }] });
    expect(result.status).toBe('completed');
    expect(pay.runs).toEqual([3]);
  });

  it('refuses to run a turn when the agent lists a plugin that is not installed', async () => {
    const app = Trellis.create();
    await app.install(Pay);
    const model = new ScriptedModel(['hi']);
    const session = app.agent({ name: 'a', model, instructions: 'x', plugins: ['pya'] }).session('s');
    const error = await session.send('hello').catch((e: unknown) => e);
    expect(TrellisError.is(error, 'UnknownPlugin')).toBe(true);
    expect((error as Error).message).toContain("'pya'");
    expect((error as Error).message).toContain('pay');
    expect(model.calls).toHaveLength(0);
  });
});

describe('session.pending()', () => {
  it('reads parked calls from the store for a session object that was never used', async () => {
    const { MemoryStore } = await import('trellis/testing');
    const store = new MemoryStore();
    const first = Trellis.create({ store });
    await first.install(Pay);
    const model = new ScriptedModel([{ toolCalls: [{ id: 'c7', name: 'pay.send', args: { units: 2 } }] }, 'paid']);
    expect((await first.agent({ name: 'a', model, instructions: 'x' }).session('s').send('pay 2')).status).toBe(
      'suspended',
    );

    const second = Trellis.create({ store });
    await second.install(Pay);
    const reopened = second.agent({ name: 'a', model, instructions: 'x' }).session('s');
    expect(reopened.suspended).toBe(false);
    const pending = await reopened.pending();
    expect(pending.map((p) => [p.callId, p.tool])).toEqual([['c7', 'pay.send']]);
    expect(reopened.suspended).toBe(true);
  });
});
