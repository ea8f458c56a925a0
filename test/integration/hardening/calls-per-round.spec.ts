import { randomUUID } from 'node:crypto';
import { Plugin, ScriptedModel, Tool, Trellis, TrellisError } from '../../../index.js';

class NoInput {}

function roundOf(count: number) {
  return {
    toolCalls: Array.from({ length: count }, () => ({ id: `call_${randomUUID()}`, name: 'work.step', args: {} })),
  };
}

async function appCounting(): Promise<{ app: Trellis; ran: () => number }> {
  let ran = 0;
  @Plugin({ name: 'work', version: '1.0.0' })
  class Work {
    @Tool({ name: 'work.step', description: 'Does one step. Use in tests.', input: NoInput })
    step() {
      ran++;
      return 'ok';
    }
  }
  const app = Trellis.create();
  await app.install(Work);
  return { app, ran: () => ran };
}

describe('calls per round are bounded (maxToolCallsPerRound)', () => {
  it('a round asking for 10,000 calls runs none of them and fails the turn with a clear error', async () => {
    const { app, ran } = await appCounting();
    const model = new ScriptedModel([roundOf(10_000), 'done']);
    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s1').send('go');
    expect(ran()).toBe(0);
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('ModelFailed');
    expect(result.error?.message).toContain('10000 tool calls in one round');
    expect(result.error?.message).toContain('maxToolCallsPerRound');
  });

  it("a round at the limit runs every call; the limit is the agent spec's", async () => {
    const { app, ran } = await appCounting();
    const model = new ScriptedModel([roundOf(8), 'done']);
    const result = await app
      .agent({ name: 'a', model, instructions: 'x', maxToolCallsPerRound: 8 })
      .session('s1')
      .send('go');
    expect(result.status).toBe('completed');
    expect(ran()).toBe(8);
    const over = await app
      .agent({ name: 'b', model: new ScriptedModel([roundOf(9), 'done']), instructions: 'x', maxToolCallsPerRound: 8 })
      .session('s2')
      .send('go');
    expect(over.status).toBe('failed');
    expect(ran()).toBe(8);
  });

  it('refuses a limit that is not a whole number ≥ 1', () => {
    const app = Trellis.create();
    let error: unknown;
    try {
      app.agent({ name: 'a', model: new ScriptedModel(['x']), instructions: 'x', maxToolCallsPerRound: 0 });
    } catch (caught) {
      error = caught;
    }
    expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
  });
});
