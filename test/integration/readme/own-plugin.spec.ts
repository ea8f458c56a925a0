import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Trellis } from 'trellis';
import { Hook, inject, Plugin, PLUGIN_CONFIG, Tool, block, type ToolCallInfo, type ToolContext } from 'trellis/plugin';
import { ScriptedModel } from 'trellis/testing';

// docs/plugins.md "Writing your own", kept in step with it (imports included): a plugin
// written against trellis/plugin alone, installed by an app built from trellis.
class GreetConfig {
  @IsString() greeting = 'Hello';
}

class GreetInput {
  @IsString() name!: string;
}

@Plugin({ name: 'greet', version: '1.0.0', config: GreetConfig })
class GreetPlugin {
  constructor(@inject(PLUGIN_CONFIG) private readonly config: GreetConfig) {}

  @Tool({ name: 'greet.say', description: 'Greets someone by name', input: GreetInput })
  say(input: GreetInput, _ctx: ToolContext) {
    return { text: `${this.config.greeting}, ${input.name}` };
  }

  @Hook('tool.before_call')
  noStrangers(call: ToolCallInfo) {
    return call.tool === 'greet.say' && (call.args as GreetInput).name === 'stranger'
      ? block('no strangers')
      : undefined;
  }
}

describe('a plugin written against trellis/plugin (docs/plugins.md)', () => {
  it('installs with its config, runs its tool and its hook blocks as written', async () => {
    const app = Trellis.create();
    await app.install(GreetPlugin, { config: { greeting: 'Hej' } });
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'greet.say', args: { name: 'Ada' } },
          { name: 'greet.say', args: { name: 'stranger' } },
        ],
      },
      'done',
    ]);
    const result = await app
      .agent({ name: 'greeter', model, instructions: 'Greet people.' })
      .session('s1')
      .send('Greet Ada and a stranger');
    expect(result.status).toBe('completed');
    expect(result.toolCalls[0]).toMatchObject({ tool: 'greet.say', ok: true, value: { text: 'Hej, Ada' } });
    expect(result.toolCalls[1]).toMatchObject({ tool: 'greet.say', ok: false });
    expect(JSON.stringify(result.toolCalls[1])).toContain('no strangers');
  });

  it('refuses a bad config at install, as any plugin', async () => {
    const app = Trellis.create();
    await expect(app.install(GreetPlugin, { config: { greeting: 42 } })).rejects.toMatchObject({
      code: 'InvalidConfig',
    });
  });
});
