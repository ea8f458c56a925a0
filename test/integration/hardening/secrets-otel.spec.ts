import 'reflect-metadata';
import { IsString } from 'class-validator';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Trellis, Plugin, Tool, ScriptedModel } from '../../../index.js';
import { OpenTelemetryPlugin, OTEL_TRACER_PROVIDER } from '../../../plugins/observation/index.js';

const KEY = 'sk-ant-api03-ABCDEFGHIJKLMNOPQRSTUVWXYZ';

class NoteInput {
  @IsString() note!: string;
}

@Plugin({ name: 'leaky', version: '1.0.0' })
class LeakyPlugin {
  @Tool({ name: 'leaky.call', description: 'Fails echoing a key. Tests only.', input: NoteInput })
  call(): string {
    throw new Error(`upstream said: invalid x-api-key ${KEY}`);
  }
}

describe('OpenTelemetry spans carry no secrets', () => {
  it("a failing tool's span status message is scrubbed", async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const app = Trellis.create({ providers: [{ provide: OTEL_TRACER_PROVIDER, useValue: provider }] });
    await app.install(OpenTelemetryPlugin, { config: { providerName: 'scripted' }, grants: ['events'] });
    await app.install(LeakyPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'leaky.call', args: { note: 'n' } }] }, 'done']);
    await app.agent({ name: 'a', model, instructions: 'x' }).session('s').send('go');
    await app.stop();

    const tool = exporter.getFinishedSpans().find((s) => s.attributes['gen_ai.operation.name'] === 'execute_tool')!;
    expect(tool.status.message).toContain('[Redacted]');
    expect(JSON.stringify(exporter.getFinishedSpans().map((s) => [s.attributes, s.status, s.events]))).not.toContain(
      KEY,
    );
  });
});
