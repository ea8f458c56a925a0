import 'reflect-metadata';
import { IsNumber } from 'class-validator';
import { Trellis, Plugin, Tool, ScriptedModel, Hook, type ToolContext } from '../../../index.js';

class AddInput {
  @IsNumber() a!: number;
  @IsNumber() b!: number;
}

@Plugin({ name: 'math', version: '1.0.0' })
class MathPlugin {
  @Tool({ name: 'math.add', description: 'Adds two numbers. Use for arithmetic.', input: AddInput })
  add(input: AddInput, _ctx: ToolContext) {
    return input.a + input.b;
  }
  @Hook('planning.started')
  plan(instructions: string) {
    return `${instructions}\nBe exact.`;
  }
}

describe('agent loop smoke', () => {
  it('runs a tool round and answers', async () => {
    const app = Trellis.create();
    await app.install(MathPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'math.add', args: { a: 2, b: 3 } }] }, 'sum is 5']);
    const agent = app.agent({ name: 'calc', model, instructions: 'You add.' });
    const result = await agent.session('s1').send('2+3?');
    expect(result.status).toBe('completed');
    expect(result.rounds).toBe(2);
    expect(result.toolCalls[0]).toMatchObject({ tool: 'math.add', ok: true, value: 5 });
    expect(model.calls[0]!.messages[0]!.content).toContain('Be exact.');
    expect(model.calls[0]!.tools[0]!.inputSchema).toMatchObject({ type: 'object', additionalProperties: false });
  });
});
