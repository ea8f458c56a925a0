import { Trellis } from 'trellis';
import { ScriptedModel } from 'trellis/testing';
import { GreeterPlugin } from '../plugins/greeter.plugin.js';

async function greet(locale: string | undefined, args: unknown) {
  const app = Trellis.create();
  await app.install(GreeterPlugin);
  const model = new ScriptedModel([{ toolCalls: [{ name: 'greeter.hello', args }] }, 'Done.']);
  const context = locale ? { 'app.locale': locale } : {};
  const result = await app.agent({ name: 'test', model, instructions: 'Greet.' }).session('s1', { context }).send('Greet Ada');
  await app.stop();
  return { result, model };
}

describe('greeter', () => {
  it('greets in the session locale, with the planning rule in the instructions', async () => {
    const { result, model } = await greet('fr', { name: 'Ada' });
    expect(result.toolCalls[0]).toMatchObject({ tool: 'greeter.hello', ok: true, value: 'Bonjour Ada' });
    expect(model.calls[0]!.messages[0]!.content).toContain('Always greet people by name.');
  });

  it('gives the model errors it can act on: a bad argument, a missing context key', async () => {
    expect((await greet('en', { name: 42 })).result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolInput' } });
    expect((await greet(undefined, { name: 'Ada' })).result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'MissingContext' } });
  });
});
