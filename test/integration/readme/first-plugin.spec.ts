import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Trellis, Plugin, Tool, Hook, Requires, type ToolContext } from 'trellis';
import { ScriptedModel } from 'trellis/testing';

// The README's "A first plugin", kept in step with it (imports included): if this breaks, the README is wrong.
class Greet {
  @IsString() name!: string;
}

@Plugin({ name: 'greeter', version: '1.0.0', description: 'Says hello' })
class GreeterPlugin {
  @Tool({ name: 'greeter.hello', input: Greet, description: 'Greets someone by name. Use when asked to greet.' })
  @Requires('app.locale')
  hello(input: Greet, ctx: ToolContext) {
    return ctx.deps['app.locale'] === 'fr' ? `Bonjour ${input.name}` : `Hello ${input.name}`;
  }

  @Hook('planning.started')
  plan(instructions: string) {
    return `${instructions}\nAlways greet politely.`;
  }
}

describe('the README first plugin', () => {
  it('runs as the README says', async () => {
    const app = Trellis.create();
    await app.install(GreeterPlugin);
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'greeter.hello', args: { name: 'Ada' } }] },
      'Done: Hello Ada',
    ]);
    const agent = app.agent({ name: 'greeter', model, instructions: 'You greet people.' });
    const result = await agent.session('s1', { context: { 'app.locale': 'fr' } }).send('Greet Ada');
    expect(result.status).toBe('completed');
    expect(result.reply).toBe('Done: Hello Ada');
    expect(result.toolCalls[0]).toMatchObject({ tool: 'greeter.hello', ok: true, value: 'Bonjour Ada' });
    expect(model.calls[0]!.messages[0]!.content).toBe('You greet people.\nAlways greet politely.');
    expect(model.calls[1]!.messages.at(-1)).toMatchObject({ role: 'tool', content: 'Bonjour Ada' });
  });

  it('gives the model a MissingContext result when the declared key is absent', async () => {
    const app = Trellis.create();
    await app.install(GreeterPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'greeter.hello', args: { name: 'Ada' } }] }, 'ok']);
    const result = await app.agent({ name: 'greeter', model, instructions: 'x' }).session('s2').send('Greet Ada');
    expect(result.status).toBe('completed');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'MissingContext' } });
    expect(String(model.calls[1]!.messages.at(-1)!.content)).toContain('app.locale');
  });
});
