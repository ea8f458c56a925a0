import 'reflect-metadata';
import { IsInt } from 'class-validator';
import { Trellis, Plugin, Tool, ScriptedModel, type AgentSpec, type ChatMessage } from '../../../index.js';

class SizeInput {
  @IsInt() size!: number;
}

@Plugin({ name: 'big', version: '1.0.0' })
class BigPlugin {
  @Tool({ name: 'big.text', description: 'Returns `size` characters. Tests only.', input: SizeInput })
  text(input: SizeInput) {
    return 'x'.repeat(input.size);
  }

  @Tool({
    name: 'big.small',
    description: 'Returns `size` characters, capped at 50. Tests only.',
    input: SizeInput,
    maxResultChars: 50,
  })
  small(input: SizeInput) {
    return { rows: 'y'.repeat(input.size) };
  }
}

async function run(tool: string, size: number, spec: Partial<AgentSpec> = {}) {
  const app = Trellis.create();
  await app.install(BigPlugin);
  const model = new ScriptedModel([{ toolCalls: [{ name: tool, args: { size } }] }, 'done']);
  const result = await app
    .agent({ name: 'a', model, instructions: 'x', ...spec })
    .session('s')
    .send('go');
  const seen = String(model.calls[1]!.messages.find((m: ChatMessage) => m.role === 'tool')!.content);
  return { result, seen };
}

describe('a tool result sent to the model is capped; the record keeps all of it', () => {
  it('caps at 100,000 characters by default, with a note saying how much was left out', async () => {
    const { result, seen } = await run('big.text', 5_000_000);
    expect(seen.length).toBeLessThan(100_400);
    expect(seen.startsWith('x'.repeat(100_000))).toBe(true);
    expect(seen).toMatch(/\[Trellis: result truncated: 5000000 characters, the first 100000 shown\./);
    expect(result.toolCalls[0]).toMatchObject({ ok: true });
    expect((result.toolCalls[0] as { value: string }).value).toHaveLength(5_000_000);
  });

  it('the agent sets its own cap', async () => {
    const { seen } = await run('big.text', 2_000, { maxToolResultChars: 500 });
    expect(seen).toMatch(/^x{500}\n\[Trellis: result truncated: 2000 characters, the first 500 shown\./);
  });

  it("a tool's own maxResultChars wins over the agent's", async () => {
    const { result, seen } = await run('big.small', 1_000, { maxToolResultChars: 500 });
    expect(seen.slice(0, 50)).toBe(JSON.stringify({ rows: 'y'.repeat(1_000) }).slice(0, 50));
    expect(seen).toMatch(/first 50 shown/);
    expect((result.toolCalls[0] as { value: { rows: string } }).value.rows).toHaveLength(1_000);
  });

  it('an agent cap below 1 is refused when the agent is made', async () => {
    const app = Trellis.create();
    expect(() =>
      app.agent({ name: 'a', model: new ScriptedModel([]), instructions: 'x', maxToolResultChars: 0 }),
    ).toThrow(
      expect.objectContaining({
        code: 'InvalidOptions',
        message: expect.stringContaining('maxToolResultChars must be a whole number ≥ 1'),
      }),
    );
  });

  it('a result within the cap is sent unchanged', async () => {
    const { seen } = await run('big.text', 500, { maxToolResultChars: 500 });
    expect(seen).toBe('x'.repeat(500));
  });
});
