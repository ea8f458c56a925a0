import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Trellis, Plugin, Tool, ScriptedModel, TrellisError, type ToolContext } from '../../../index.js';
import { MetricsPlugin } from '../../../plugins/observation/index.js';

class EchoInput {
  @IsString() text!: string;
}

@Plugin({ name: 'echo', version: '1.0.0' })
class EchoPlugin {
  @Tool({ name: 'echo.say', description: 'Echoes the text back. Use to repeat something.', input: EchoInput })
  say(input: EchoInput, _ctx: ToolContext) {
    return input.text;
  }

  @Tool({ name: 'echo.fail', description: 'Always fails. Never use it.', input: EchoInput })
  fail(_input: EchoInput, _ctx: ToolContext): string {
    throw new Error('boom');
  }
}

async function runTurn(app: Trellis) {
  const model = new ScriptedModel(
    [
      {
        toolCalls: [
          { name: 'echo.say', args: { text: 'hi' } },
          { name: 'echo.fail', args: { text: 'x' } },
        ],
        usage: { inputTokens: 100, outputTokens: 20 },
      },
      { text: 'done', usage: { inputTokens: 150, outputTokens: 5 } },
    ],
    { name: 'gpt-test' },
  );
  return app.agent({ name: 'a', model, instructions: 'Echo.' }).session('s1').send('say hi');
}

describe('MetricsPlugin', () => {
  it('exposes model and tool latency, tokens by model and errors by code after a turn', async () => {
    const app = Trellis.create();
    const { instance } = await app.install(MetricsPlugin, { grants: ['events'] });
    await app.install(EchoPlugin);
    const metrics = instance;
    const result = await runTurn(app);
    expect(result.status).toBe('completed');

    const text = await metrics.metrics();
    expect(text).toContain('# TYPE trellis_model_latency_seconds histogram');
    expect(text).toMatch(/trellis_model_latency_seconds_count\{model="gpt-test"\} 2/);
    expect(text).toMatch(/trellis_tool_latency_seconds_count\{tool="echo.say",outcome="ok"\} 1/);
    expect(text).toMatch(/trellis_tool_latency_seconds_count\{tool="echo.fail",outcome="error"\} 1/);
    // Round 1 is the agent's own; round 2 read echo's results, so its tokens are echo's.
    expect(text).toMatch(/trellis_tokens_total\{model="gpt-test",type="input"\} 100/);
    expect(text).toMatch(/trellis_tokens_total\{model="gpt-test",type="output"\} 20/);
    expect(text).toMatch(/trellis_tokens_total\{model="gpt-test",plugin="echo",type="input"\} 150/);
    expect(text).toMatch(/trellis_tokens_total\{model="gpt-test",plugin="echo",type="output"\} 5/);
    expect(text).toMatch(/trellis_errors_total\{code="ToolFailed",source="tool"\} 1/);
    expect(text).toMatch(/trellis_turn_latency_seconds_count\{status="completed"\} 1/);
    expect(metrics.contentType).toContain('text/plain');
  });

  it('counts a failed turn under its error code', async () => {
    const app = Trellis.create();
    const { instance } = await app.install(MetricsPlugin, { grants: ['events'], config: { prefix: 'bot_' } });
    const model = new ScriptedModel([new TrellisError('ModelFailed', 'upstream down')]);
    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s2').send('hi');
    expect(result.status).toBe('failed');
    const text = await instance.metrics();
    expect(text).toMatch(/bot_errors_total\{code="ModelFailed",source="app"\} 1/);
    expect(text).toMatch(/bot_turn_latency_seconds_count\{status="failed"\} 1/);
  });

  it('keeps its own registry: two apps never mix their numbers', async () => {
    const one = Trellis.create();
    const two = Trellis.create();
    const a = (await one.install(MetricsPlugin, { grants: ['events'] })).instance;
    const b = (await two.install(MetricsPlugin, { grants: ['events'] })).instance;
    await one.install(EchoPlugin);
    await runTurn(one);
    expect(await a.metrics()).toMatch(/trellis_tokens_total\{model="gpt-test",type="input"\} 100/);
    expect(await b.metrics()).not.toMatch(/trellis_tokens_total\{/);
  });

  it('stops observing once uninstalled', async () => {
    const app = Trellis.create();
    const metrics = (await app.install(MetricsPlugin, { grants: ['events'] })).instance;
    await app.install(EchoPlugin);
    await app.uninstall('metrics');
    await runTurn(app);
    expect(await metrics.metrics()).not.toMatch(/trellis_tokens_total\{/);
  });

  it('refuses bad config, naming every bad field', async () => {
    const app = Trellis.create();
    const error = await app
      .install(MetricsPlugin, {
        grants: ['events'],
        config: { prefix: '9bad-', latencyBuckets: [0.1, -1], processMetrics: 'yes' },
      })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    const message = (error as Error).message;
    expect(message).toContain('prefix');
    expect(message).toContain('latencyBuckets');
    expect(message).toContain('processMetrics');
  });
});
