import 'reflect-metadata';
import { IsOptional, IsString } from 'class-validator';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { Trellis, Plugin, Tool, ScriptedModel, LoggingMiddleware, Middleware, createLogger, TRELLIS_LOGGER, type TrellisEvent } from '../../../index.js';
import { OpenTelemetryPlugin, OTEL_TRACER_PROVIDER } from '../../../plugins/observation/index.js';

/**
 * Each secret placed in each source (a tool's arguments, its error, its result) must appear
 * 0 times in clear in every sink: events$ (model deltas included), the logging middleware's
 * log, the turn result, OpenTelemetry spans, and the error text the model reads.
 */
const PEM = '-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7MhgHcTz6sE2I2yPB\naFDrBz9vFqU4yV8EXAMPLEPEMBODYLINE0123456789abcdefABCDEF\n-----END RSA PRIVATE KEY-----';

/** Each secret: the value placed, and the part of it that must never appear in clear. */
const SECRETS: ReadonlyArray<readonly [name: string, placed: string, clear: string]> = [
  ['AWS secret access key', 'aws_secret_access_key=wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
  ['AWS secret key alone', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY', 'wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY'],
  ['DB password in a URL', 'postgres://app:S3cr3tPa55w0rd@db.internal:5432/prod', 'S3cr3tPa55w0rd'],
  ['PEM private key', PEM, 'MIIEowIBAAKCAQEA0Z3VS5JJcds3xfn'],
  ['Azure storage key', 'DefaultEndpointsProtocol=https;AccountName=acme;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;EndpointSuffix=core.windows.net', 'Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq'],
  ['a PIN in text', 'pin: 904172', '904172'],
  ['a cookie header', 'Cookie: sessionid=9f8e7d6c5b4a3928; csrftoken=Zx81kQpL0vT3', '9f8e7d6c5b4a3928'],
  ['a hex token', 'token a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3', 'a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3'],
  ['a bare hex token', 'a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3', 'a3f5c9e1b7d2468f0e1c3b5a79d8f6e4c2b0a1d3'],
  ['a base64 token', 'dGhpc0lzQVZlcnlMb25nU2VjcmV0VG9rZW5WYWx1ZTEyMw', 'dGhpc0lzQVZlcnlMb25nU2VjcmV0VG9rZW5WYWx1ZTEyMw'],
  ['a bearer token', 'Authorization: Bearer 7Fq2vX9pL3mK8rT1', '7Fq2vX9pL3mK8rT1'],
  ['an OpenAI key', 'sk-proj-ABCDEFGHIJKLMNOPQRSTUVWXYZ123456', 'ABCDEFGHIJKLMNOPQRSTUVWXYZ123456'],
  ['a GitHub token', 'ghp_16C7e42F292c6912E7710c838347Ae178B4a', '16C7e42F292c6912E7710c838347Ae178B4a'],
  ['a JWT', 'eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJhbGljZSJ9.Sfl5kKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw', 'Sfl5kKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw'],
];

class NoteInput {
  @IsString() note!: string;
  @IsOptional() @IsString() source?: string;
}

@Plugin({ name: 'carrier', version: '1.0.0' })
@Middleware(LoggingMiddleware)
class CarrierPlugin {
  @Tool({ name: 'carrier.echo', description: 'Returns its note. Tests only.', input: NoteInput })
  echo(input: NoteInput) {
    return { note: input.note };
  }

  @Tool({ name: 'carrier.take', description: 'Takes a note and answers ok. Tests only.', input: NoteInput })
  take() {
    return 'ok';
  }

  @Tool({ name: 'carrier.fail', description: 'Fails with its note. Tests only.', input: NoteInput })
  fail(input: NoteInput) {
    throw new Error(`upstream refused the request: ${input.note}`);
  }
}

type Source = 'arguments' | 'error' | 'result';

/** One turn carrying `secret` from `source`; every sink's text. */
async function sinks(secret: string, source: Source): Promise<Record<string, string>> {
  const lines: string[] = [];
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const app = Trellis.create({
    providers: [
      { provide: TRELLIS_LOGGER, useValue: createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(line) } }) },
      { provide: OTEL_TRACER_PROVIDER, useValue: provider },
    ],
  });
  await app.install(OpenTelemetryPlugin, { config: { providerName: 'scripted' }, grants: ['events'] });
  await app.install(CarrierPlugin);
  const events: TrellisEvent[] = [];
  app.events$.subscribe((e) => events.push(e));
  // Arguments: the model writes the secret; error and result: the tool's own output carries it.
  const tool = { arguments: 'carrier.take', error: 'carrier.fail', result: 'carrier.echo' }[source];
  const model = new ScriptedModel([{ toolCalls: [{ name: tool, args: { note: secret } }] }, 'done']);
  const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s');
  session.events$.subscribe((e) => events.push(e));
  const result = await session.send('go');
  await app.stop();
  const out: Record<string, string> = {
    events: JSON.stringify(events),
    log: lines.join('\n'),
    'turn result': JSON.stringify(result),
    spans: JSON.stringify(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.status, s.events])),
  };
  if (source === 'error') out['error text the model reads'] = JSON.stringify(model.calls[1]?.messages.filter((m) => m.role === 'tool') ?? []);
  return out;
}

describe('each secret from each source: 0 in clear in every sink', () => {
  const sources: Source[] = ['arguments', 'error', 'result'];
  it.each(SECRETS)('%s', async (_name, placed, clear) => {
    const leaks: string[] = [];
    for (const source of sources) {
      for (const [sink, text] of Object.entries(await sinks(placed, source))) {
        if (text.includes(clear)) {
          leaks.push(`${source} → ${sink}`);
          if (process.env.SHOW_LEAKS) console.log(source, sink, text.slice(Math.max(0, text.indexOf(clear) - 300), text.indexOf(clear) + 60));
        }
      }
    }
    expect(leaks).toEqual([]);
  });

  it('ordinary text and ids are left alone', async () => {
    const note = 'Order A1002 for alice@example.com, id 3f2a1c9e-2b4d-4e8f-9a6b-1c2d3e4f5a6b, shipped to /usr/local/share';
    const all = await sinks(note, 'arguments');
    expect(all.events).toContain(note);
  });
});
