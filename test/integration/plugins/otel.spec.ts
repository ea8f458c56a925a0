import 'reflect-metadata';
import { IsString } from 'class-validator';
import { SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  SimpleSpanProcessor,
  type ReadableSpan,
} from '@opentelemetry/sdk-trace-base';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  ScriptedModel,
  TrellisError,
  block,
  type ToolContext,
  type ToolCallInfo,
} from '../../../index.js';
import { OpenTelemetryPlugin, OTEL_TRACER_PROVIDER } from '../../../plugins/observation/index.js';

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

@Plugin({ name: 'guard', version: '1.0.0' })
class GuardPlugin {
  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return call.tool === 'echo.fail' ? block('not allowed') : undefined;
  }
}

function tracing() {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const app = Trellis.create({ providers: [{ provide: OTEL_TRACER_PROVIDER, useValue: provider }] });
  return { app, exporter };
}

const parentOf = (span: ReadableSpan) => span.parentSpanContext?.spanId;

describe('OpenTelemetryPlugin', () => {
  it('records turn, model-call and tool-call spans with GenAI attributes and turn → round/tool parents', async () => {
    const { app, exporter } = tracing();
    await app.install(OpenTelemetryPlugin, { grants: ['events'], config: { providerName: 'scripted' } });
    await app.install(EchoPlugin);
    const model = new ScriptedModel(
      [
        {
          toolCalls: [
            { id: 'c1', name: 'echo.say', args: { text: 'hi' } },
            { id: 'c2', name: 'echo.fail', args: { text: 'x' } },
          ],
          usage: { inputTokens: 100, outputTokens: 20 },
        },
        { text: 'done', usage: { inputTokens: 150, outputTokens: 5 } },
      ],
      { name: 'gpt-test' },
    );
    const agent = app.agent({
      name: 'a',
      model,
      instructions: 'Echo.',
      inference: { model: 'gpt-requested', temperature: 0.2 },
    });
    expect((await agent.session('s1').send('say hi')).status).toBe('completed');

    const spans = exporter.getFinishedSpans();
    const turn = spans.find((s) => s.name === 'invoke_agent')!;
    const chats = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'chat');
    const tools = spans.filter((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool');
    expect(turn.attributes).toMatchObject({
      'gen_ai.operation.name': 'invoke_agent',
      'gen_ai.conversation.id': 's1',
      'trellis.turn.status': 'completed',
    });
    expect(chats).toHaveLength(2);
    expect(chats[0]!.name).toBe('chat gpt-requested');
    expect(chats[0]!.kind).toBe(SpanKind.CLIENT);
    expect(chats[0]!.attributes).toMatchObject({
      'gen_ai.request.model': 'gpt-requested',
      'gen_ai.request.temperature': 0.2,
      'gen_ai.response.model': 'gpt-test',
      'gen_ai.provider.name': 'scripted',
      'gen_ai.usage.input_tokens': 100,
      'gen_ai.usage.output_tokens': 20,
    });
    expect(chats[1]!.attributes).toMatchObject({ 'gen_ai.usage.input_tokens': 150, 'gen_ai.usage.output_tokens': 5 });
    expect(tools.map((s) => s.name).sort()).toEqual(['execute_tool echo.fail', 'execute_tool echo.say']);
    const say = tools.find((s) => s.attributes['gen_ai.tool.name'] === 'echo.say')!;
    const fail = tools.find((s) => s.attributes['gen_ai.tool.name'] === 'echo.fail')!;
    expect(say.attributes['gen_ai.tool.call.id']).toBe('c1');
    expect(say.status.code).not.toBe(SpanStatusCode.ERROR);
    expect(fail.status.code).toBe(SpanStatusCode.ERROR);
    expect(fail.attributes['error.type']).toBe('ToolFailed');
    for (const child of [...chats, ...tools]) {
      expect(parentOf(child)).toBe(turn.spanContext().spanId);
      expect(child.spanContext().traceId).toBe(turn.spanContext().traceId);
    }
    expect(parentOf(turn)).toBeUndefined();
  });

  it("nests a sub-agent's invoke_agent span inside the caller's execute_tool span, in one trace", async () => {
    const { app, exporter } = tracing();
    await app.install(OpenTelemetryPlugin, { grants: ['events'], config: {} });
    app.agent({ name: 'helper', model: new ScriptedModel(['helped']), instructions: 'Help.' });
    const model = new ScriptedModel([
      { toolCalls: [{ id: 'd1', name: 'ask_helper', args: { input: 'please' } }] },
      'thanks',
    ]);
    const agent = app.agent({
      name: 'boss',
      model,
      instructions: 'Delegate.',
      agents: [{ agent: 'helper', name: 'ask_helper', description: 'Ask the helper. Tests only.' }],
    });
    expect((await agent.session('s-nest').send('go')).reply).toBe('thanks');

    const spans = exporter.getFinishedSpans();
    const top = spans.find((s) => s.name === 'invoke_agent')!;
    const call = spans.find((s) => s.name === 'execute_tool ask_helper')!;
    const inner = spans.find((s) => s.name === 'invoke_agent helper')!;
    expect(parentOf(call)).toBe(top.spanContext().spanId);
    expect(parentOf(inner)).toBe(call.spanContext().spanId);
    expect(inner.attributes['gen_ai.agent.name']).toBe('helper');
    expect(inner.spanContext().traceId).toBe(top.spanContext().traceId);
    const innerChat = spans.find(
      (s) => s.attributes['gen_ai.operation.name'] === 'chat' && parentOf(s) === inner.spanContext().spanId,
    );
    expect(innerChat).toBeDefined();
  });

  it('falls back to the answering model for gen_ai.request.model when none was requested', async () => {
    const { app, exporter } = tracing();
    await app.install(OpenTelemetryPlugin, { grants: ['events'] });
    const model = new ScriptedModel(['hello'], { name: 'default-model' });
    await app.agent({ name: 'a', model, instructions: 'x' }).session('s1').send('hi');
    const chat = exporter.getFinishedSpans().find((s) => s.attributes['gen_ai.operation.name'] === 'chat')!;
    expect(chat.name).toBe('chat default-model');
    expect(chat.attributes['gen_ai.request.model']).toBe('default-model');
  });

  it('marks a failed model call and its turn as errors and ends every span', async () => {
    const { app, exporter } = tracing();
    await app.install(OpenTelemetryPlugin, { grants: ['events'] });
    const model = new ScriptedModel([new TrellisError('ModelFailed', 'upstream down')]);
    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s1').send('hi');
    expect(result.status).toBe('failed');
    const spans = exporter.getFinishedSpans();
    const chat = spans.find((s) => s.attributes['gen_ai.operation.name'] === 'chat')!;
    const turn = spans.find((s) => s.name === 'invoke_agent')!;
    expect(chat.status.code).toBe(SpanStatusCode.ERROR);
    expect(chat.attributes['error.type']).toBe('ModelFailed');
    expect(turn.status.code).toBe(SpanStatusCode.ERROR);
    expect(turn.attributes['trellis.turn.status']).toBe('failed');
  });

  it('ends the span of a call blocked at tool.gate with an error status', async () => {
    const { app, exporter } = tracing();
    await app.install(OpenTelemetryPlugin, { grants: ['events'] });
    await app.install(EchoPlugin);
    await app.install(GuardPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ id: 'c9', name: 'echo.fail', args: { text: 'x' } }] }]);
    const result = await app.agent({ name: 'a', model, instructions: 'x' }).session('s1').send('hi');
    expect(result.status).toBe('blocked');
    const spans = exporter.getFinishedSpans();
    const tool = spans.find((s) => s.attributes['gen_ai.tool.call.id'] === 'c9')!;
    expect(tool.attributes['error.type']).toBe('Blocked');
    expect(tool.status.code).toBe(SpanStatusCode.ERROR);
    expect(tool.attributes['trellis.unfinished']).toBeUndefined();
    expect(spans.find((s) => s.name === 'invoke_agent')!.attributes['trellis.turn.status']).toBe('blocked');
  });

  it('uses the global tracer provider when none is bound', async () => {
    const exporter = new InMemorySpanExporter();
    trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }));
    try {
      const app = Trellis.create();
      await app.install(OpenTelemetryPlugin, { grants: ['events'] });
      await app
        .agent({ name: 'a', model: new ScriptedModel(['hi']), instructions: 'x' })
        .session('g1')
        .send('hi');
      expect(
        exporter
          .getFinishedSpans()
          .map((s) => s.name)
          .sort(),
      ).toEqual(['chat scripted', 'invoke_agent']);
    } finally {
      trace.disable();
    }
  });

  it('refuses bad config, naming every bad field', async () => {
    const error = await Trellis.create()
      .install(OpenTelemetryPlugin, { grants: ['events'], config: { tracerName: '', providerName: 42 } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    expect((error as Error).message).toContain('tracerName');
    expect((error as Error).message).toContain('providerName');
  });
});
