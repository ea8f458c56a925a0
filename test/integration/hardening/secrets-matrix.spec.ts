import 'reflect-metadata';
import { mkdtempSync, realpathSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import {
  FallbackModel,
  MemoryStore,
  Trellis,
  type ModelProvider,
  type PluginClass,
  type TrellisEvent,
} from '../../../index.js';
import { createLogger, TRELLIS_LOGGER } from '../../../plugins/middleware/index.js';
import { serveMcp } from '../../../mcp.js';
import { OpenTelemetryPlugin, OTEL_TRACER_PROVIDER } from '../../../plugins/observation/index.js';
import { runCli } from '../../../src/hosts/cli/program.js';
import { devHandler } from '../../../src/hosts/dev/dev-server.js';
import { TurnEventRecorder } from '../../../src/hosts/dev/recording/turn-event-recorder.js';
import { fakeCliIo } from '../../support/fake-cli-io.js';
import {
  callOf,
  contextOf,
  modelOf,
  ORDINARY_SECRET,
  pluginsOf,
  SECRETS,
  SOURCES,
  type ModelReads,
  type Source,
} from '../../support/secret-matrix.js';

/**
 * Issue 33, item 5: each secret placed in each source (a tool's arguments, its error, its
 * result, a `@Secret()` field, a plugin's config, a model provider's options, host context)
 * must appear 0 times in clear in every sink: events$ (model deltas included), the logging
 * middleware's log, the turn result, OpenTelemetry spans, the error text the model reads,
 * the dev page and its API, MCP error replies, and the CLI's output.
 */

/** A raw JSON-RPC peer over in-memory stdio. */
class McpPeer {
  readonly stdin = new PassThrough();
  readonly stdout = new PassThrough();
  readonly #waiting: ((line: Record<string, unknown>) => void)[] = [];
  #buffer = '';

  constructor() {
    this.stdout.setEncoding('utf8').on('data', (chunk: string) => {
      this.#buffer += chunk;
      for (let i = this.#buffer.indexOf('\n'); i >= 0; i = this.#buffer.indexOf('\n')) {
        const line = JSON.parse(this.#buffer.slice(0, i)) as Record<string, unknown>;
        this.#buffer = this.#buffer.slice(i + 1);
        this.#waiting.shift()?.(line);
      }
    });
  }

  request(id: number, method: string, params: unknown = {}): Promise<Record<string, unknown>> {
    const answer = new Promise<Record<string, unknown>>((resolve) => this.#waiting.push(resolve));
    this.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', id, method, params })}\n`);
    return answer;
  }

  notify(method: string): void {
    this.stdin.write(`${JSON.stringify({ jsonrpc: '2.0', method })}\n`);
  }
}

function agentModel(model: ModelProvider | ModelProvider[]): ModelProvider {
  return Array.isArray(model) ? new FallbackModel(model) : model;
}

/** One turn per host carrying `secret` from `source`; every sink's text. */
async function sinks(secret: string, source: Source, cliDir: string): Promise<Record<string, string>> {
  const lines: string[] = [];
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const store = new MemoryStore();
  const app = Trellis.create({
    store,
    providers: [
      {
        provide: TRELLIS_LOGGER,
        useValue: createLogger({ level: 'debug', destination: { write: (line: string) => void lines.push(line) } }),
      },
      { provide: OTEL_TRACER_PROVIDER, useValue: provider },
    ],
  });
  await app.install(OpenTelemetryPlugin, { config: { providerName: 'scripted' }, grants: ['events'] });
  for (const [plugin, options] of pluginsOf(source, secret)) await app.install(plugin as PluginClass, options);
  const reads: ModelReads = { toolMessages: [] };
  const context = contextOf(source, secret);
  // A list of models, as an agent spec takes it: the kernel's own fallback, with its `model.fallback` event.
  const agent = app.agent({ name: 'a', model: modelOf(source, secret, reads), instructions: 'x' });
  const events: TrellisEvent[] = [];
  app.events$.subscribe((e) => events.push(e));
  agent.session('s', { context }).events$.subscribe((e) => events.push(e));

  // The dev page's API runs the turn, as a person at the page would; then every view of it.
  const recorder = new TurnEventRecorder(app.events$, store).start();
  const dev = devHandler({ app, agent, store, context }, recorder, new AbortController().signal);
  const headers = { host: '127.0.0.1:4477' };
  const get = async (path: string) => (await dev(new Request(`http://127.0.0.1:4477${path}`, { headers }))).text();
  const turn = await (
    await dev(
      new Request('http://127.0.0.1:4477/api/sessions/s/messages', {
        method: 'POST',
        headers: { ...headers, 'content-type': 'application/json', 'sec-fetch-site': 'same-origin' },
        body: JSON.stringify({ message: 'go' }),
      }),
    )
  ).text();
  await recorder.flushed();
  const devViews = await Promise.all(
    [
      '/',
      '/sessions/s',
      '/api/sessions',
      '/api/sessions/s',
      '/api/sessions/s/turns/0/events',
      '/plugins',
      '/api/plugins',
    ].map(get),
  );

  // MCP: the source's tool called directly, and the agent as `ask_a`; errors only (a tool's value is its caller's answer).
  const peer = new McpPeer();
  const serving = await serveMcp(app, {
    transport: { kind: 'stdio', stdin: peer.stdin, stdout: peer.stdout },
    ask: [agent],
    context,
  });
  await peer.request(1, 'initialize', {
    protocolVersion: '2025-06-18',
    capabilities: {},
    clientInfo: { name: 'matrix', version: '1' },
  });
  peer.notify('notifications/initialized');
  const call = callOf(source, secret);
  const replies = [
    ...(call ? [await peer.request(2, 'tools/call', { name: call.name, arguments: call.args })] : []),
    await peer.request(3, 'tools/call', { name: 'ask_a', arguments: { message: 'go' } }),
  ];
  await serving.close();
  await recorder.stop();
  await app.stop();

  const out: Record<string, string> = {
    events: JSON.stringify(events),
    log: lines.join('\n'),
    'turn result': turn,
    spans: JSON.stringify(exporter.getFinishedSpans().map((s) => [s.name, s.attributes, s.status, s.events])),
    'dev page and API': devViews.join('\n'),
    'MCP errors': JSON.stringify(
      replies.filter((r) => r.error !== undefined || (r.result as { isError?: boolean } | undefined)?.isError === true),
    ),
    ...(await cliOutput(secret, source, cliDir)),
  };
  // The model reads a tool's own value; what it reads of an error must be scrubbed.
  if (source !== 'result' && source !== 'arguments' && source !== 'secret field')
    out['error text the model reads'] = reads.toolMessages.join('\n');
  return out;
}

/** `trellis run` and `trellis sessions show` over a config holding the same plugins, model and context. */
async function cliOutput(secret: string, source: Source, cwd: string): Promise<Record<string, string>> {
  const reads: ModelReads = { toolMessages: [] };
  (globalThis as Record<string, unknown>).__trellisSecretMatrix = {
    plugins: pluginsOf(source, secret).map(([plugin, options]) => ({ plugin, ...options })),
    model: agentModel(modelOf(source, secret, reads)),
    agent: { name: 'a', instructions: 'x' },
    context: contextOf(source, secret),
    store: 'matrix.db',
  };
  rmSync(join(cwd, 'matrix.db'), { force: true });
  const run = fakeCliIo(cwd);
  await runCli(['node', 'trellis', 'run', '--session', 's', 'go'], run);
  const show = fakeCliIo(cwd);
  await runCli(['node', 'trellis', 'sessions', 'show', 's'], show);
  return {
    'CLI run': [...run.stdout, ...run.stderr].join('\n'),
    'CLI sessions show': [...show.stdout, ...show.stderr].join('\n'),
  };
}

/**
 * Where ordinary text placed in each source shows: the control that makes a 0 above mean
 * "redacted", not "never got there". (`CLI sessions show` cuts tool messages to 160 characters,
 * so a long error placed by config or context shows only in part there.)
 */
const REACHES: Readonly<Record<Exclude<Source, 'secret field'>, readonly string[]>> = {
  arguments: ['events', 'log', 'dev page and API', 'CLI run', 'CLI sessions show'],
  error: [
    'events',
    'log',
    'turn result',
    'spans',
    'dev page and API',
    'MCP errors',
    'CLI run',
    'CLI sessions show',
    'error text the model reads',
  ],
  result: ['events', 'log', 'turn result', 'dev page and API', 'CLI run', 'CLI sessions show'],
  'plugin config': [
    'events',
    'log',
    'turn result',
    'spans',
    'dev page and API',
    'MCP errors',
    'error text the model reads',
  ],
  'model options': ['events', 'turn result', 'spans', 'dev page and API', 'MCP errors', 'CLI run'],
  'host context': [
    'events',
    'log',
    'turn result',
    'spans',
    'dev page and API',
    'MCP errors',
    'error text the model reads',
  ],
};

describe('each secret from each source: 0 in clear in every sink', () => {
  let cliDir: string;
  beforeAll(() => {
    cliDir = realpathSync(mkdtempSync(join(tmpdir(), 'trellis-secrets-')));
    writeFileSync(join(cliDir, 'package.json'), JSON.stringify({ type: 'module' }));
    writeFileSync(join(cliDir, 'trellis.config.mjs'), 'export default () => globalThis.__trellisSecretMatrix;\n');
  });
  afterAll(() => rmSync(cliDir, { recursive: true, force: true }));

  async function leaksOf(placed: string, clear: string, sources: readonly Source[]): Promise<string[]> {
    const leaks: string[] = [];
    for (const source of sources) {
      for (const [sink, text] of Object.entries(await sinks(placed, source, cliDir))) {
        if (!text.includes(clear)) continue;
        leaks.push(`${source} → ${sink}`);
        if (process.env.SHOW_LEAKS)
          console.log(source, '→', sink, text.slice(Math.max(0, text.indexOf(clear) - 300), text.indexOf(clear) + 60));
      }
    }
    return leaks;
  }

  it.each(SECRETS)('%s', async (_name, placed, clear) => {
    expect(await leaksOf(placed, clear, SOURCES)).toEqual([]);
  });

  it('an ordinary-looking value in a @Secret() field: 0 in clear anywhere but `sessions show`, which has no app to name the field', async () => {
    const [, placed, clear] = ORDINARY_SECRET;
    expect(await leaksOf(placed, clear, ['secret field'])).toEqual(['secret field → CLI sessions show']);
  });

  it('control: ordinary text placed in each source reaches the sinks it is counted in, unredacted', async () => {
    const note =
      'Order A1002 for alice@example.com, id 3f2a1c9e-2b4d-4e8f-9a6b-1c2d3e4f5a6b, shipped to /usr/local/share';
    for (const [source, expected] of Object.entries(REACHES)) {
      const shown = Object.entries(await sinks(note, source as Source, cliDir))
        .filter(([, text]) => text.includes(note))
        .map(([sink]) => sink);
      expect({ source, shown }).toEqual({ source, shown: expected });
    }
  });
});
