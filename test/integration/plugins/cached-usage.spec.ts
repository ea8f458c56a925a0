import 'reflect-metadata';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { ScriptedModel, Trellis, type ScriptedReply } from '../../../index.js';
import { BillingPlugin, CREDITS_KEY } from '../../../plugins/billing/index.js';
import {
  MetricsPlugin,
  OpenTelemetryPlugin,
  OTEL_TRACER_PROVIDER,
  TokenAccountingPlugin,
} from '../../../plugins/observation/index.js';

/** Two model calls of one turn: the first writes 800 tokens to the cache, the second reads them. */
const script: ScriptedReply[] = [
  { text: 'first', usage: { inputTokens: 1000, outputTokens: 0, totalTokens: 1000, cacheWriteInputTokens: 800 } },
  { text: 'second', usage: { inputTokens: 1000, outputTokens: 0, totalTokens: 1000, cachedInputTokens: 800 } },
];

describe('cached input tokens through usage, billing, token accounting, metrics and OpenTelemetry', () => {
  it('TurnResult.usage sums cached and cache-write tokens over the turn’s calls, per model too', async () => {
    const session = Trellis.create()
      .agent({ name: 'a', model: new ScriptedModel(script, { name: 'm1' }), instructions: 'x' })
      .session('s');
    await session.send('one');
    const second = await session.send('two');
    expect(second.usage).toMatchObject({
      inputTokens: 1000,
      cachedInputTokens: 800,
      byModel: { m1: { cachedInputTokens: 800 } },
    });
  });

  it('billing prices cached and cache-write tokens at their own prices, other tokens at pricePer1kTokens', async () => {
    const app = Trellis.create();
    await app.install(BillingPlugin, {
      config: {
        plans: [{ name: 'p', credits: 10 }],
        pricePer1kTokens: 1,
        pricePer1kCachedInputTokens: 0.1,
        pricePer1kCacheWriteTokens: 1.25,
      },
    });
    const agent = app.agent({ name: 'a', model: new ScriptedModel(script), instructions: 'x' });
    const session = agent.session('s', { context: { 'app.user_id': 'u' } });
    await session.send('one');
    // 200 plain tokens at 1 + 800 written at 1.25 = 1.2 credits.
    expect(session.values[CREDITS_KEY]).toEqual({ u: 8.8 });
    await session.send('two');
    // 200 plain at 1 + 800 read at 0.1 = 0.28 credits.
    expect(session.values[CREDITS_KEY]).toEqual({ u: 8.52 });
  });

  it('token accounting keeps the cache counts in the session totals and per model', async () => {
    const app = Trellis.create();
    const tokens = (await app.install(TokenAccountingPlugin)).instance;
    const session = app
      .agent({ name: 'a', model: new ScriptedModel(script, { name: 'm1' }), instructions: 'x' })
      .session('s');
    await session.send('one');
    await session.send('two');
    expect(tokens.sessionUsage(session)).toMatchObject({
      inputTokens: 2000,
      cachedInputTokens: 800,
      cacheWriteInputTokens: 800,
      calls: 2,
      byModel: { m1: { cachedInputTokens: 800, cacheWriteInputTokens: 800 } },
    });
  });

  it('metrics count cached_input and cache_write_input tokens by model', async () => {
    const app = Trellis.create();
    const metrics = (await app.install(MetricsPlugin, { grants: ['events'] })).instance;
    const session = app
      .agent({ name: 'a', model: new ScriptedModel(script, { name: 'm1' }), instructions: 'x' })
      .session('s');
    await session.send('one');
    await session.send('two');
    const text = await metrics.metrics();
    expect(text).toMatch(/trellis_tokens_total\{model="m1",type="cached_input"\} 800/);
    expect(text).toMatch(/trellis_tokens_total\{model="m1",type="cache_write_input"\} 800/);
    expect(text).toMatch(/trellis_tokens_total\{model="m1",type="input"\} 2000/);
  });

  it('OpenTelemetry chat spans carry gen_ai.usage.cache_read.input_tokens and gen_ai.usage.cache_creation.input_tokens', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const app = Trellis.create({ providers: [{ provide: OTEL_TRACER_PROVIDER, useValue: provider }] });
    await app.install(OpenTelemetryPlugin, { grants: ['events'], config: { providerName: 'scripted' } });
    const session = app.agent({ name: 'a', model: new ScriptedModel(script), instructions: 'x' }).session('s');
    await session.send('one');
    await session.send('two');
    const chats = exporter.getFinishedSpans().filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    expect(chats[0]!.attributes).toMatchObject({
      'gen_ai.usage.input_tokens': 1000,
      'gen_ai.usage.cache_creation.input_tokens': 800,
    });
    expect(chats[0]!.attributes).not.toHaveProperty(['gen_ai.usage.cache_read.input_tokens']);
    expect(chats[1]!.attributes).toMatchObject({ 'gen_ai.usage.cache_read.input_tokens': 800 });
  });
});
