import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Plugin, Tool, Trellis, TrellisError } from '../../../index.js';
import { ScriptedModel } from '../../../testing.js';

class NoInput {}
class Settings {
  @IsString() region!: string;
}

class Greeter {
  constructor(readonly greeting: string) {}
}

@Plugin({ name: 'hello', version: '1.0.0', config: Settings })
class HelloPlugin {
  constructor(private readonly greeter: Greeter) {}
  @Tool({ name: 'hello.greet', description: 'Greets. Use when asked to greet; not otherwise.', input: NoInput })
  greet() {
    return this.greeter.greeting;
  }
}

@Plugin({ name: 'other', version: '1.0.0' })
class OtherPlugin {}

describe('installing a plugin instance built by the host', () => {
  it('uses the given instance for the tools instead of constructing one', async () => {
    const app = Trellis.create();
    const instance = new HelloPlugin(new Greeter('bonjour'));
    const installed = await app.install(HelloPlugin, { instance, config: { region: 'eu' } });
    expect(installed.instance).toBe(instance);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'hello.greet', args: {} }] }, 'done']);
    const result = await app.agent({ name: 'a', model, instructions: '' }).session('s').send('hi');
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'bonjour' });
  });

  it('refuses an instance of another class, and registers nothing', async () => {
    const app = Trellis.create();
    const error = await app
      .install(HelloPlugin, { instance: new OtherPlugin(), config: { region: 'eu' } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
    expect((error as Error).message).toContain('not a HelloPlugin: got an instance of OtherPlugin');
    expect(app.describe().plugins.map((p) => p.name)).not.toContain('hello');
  });

  it('refuses a plain object that only looks like the plugin', async () => {
    const app = Trellis.create();
    const error = await app
      .install(HelloPlugin, { instance: { greet: () => 'x' }, config: { region: 'eu' } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidPlugin')).toBe(true);
  });

  it('still validates config for a given instance', async () => {
    const app = Trellis.create();
    const error = await app
      .install(HelloPlugin, { instance: new HelloPlugin(new Greeter('x')), config: { region: 4 } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
  });
});
