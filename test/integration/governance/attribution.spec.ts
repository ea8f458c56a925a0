import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsString } from 'class-validator';
import { firstValueFrom, filter, toArray, take } from 'rxjs';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { MetricsPlugin, OpenTelemetryPlugin, OTEL_TRACER_PROVIDER } from '../../../plugins/observation/index.js';
import {
  Hook,
  MemoryStore,
  Plugin,
  ScriptedModel,
  suspend,
  Tool,
  Transform,
  Trellis,
  type ToolCallInfo,
  type TrellisEvent,
} from '../../../index.js';
import type { PluginHost, InferenceRequest } from '../../../plugin.js';

class Q {
  @IsString() q!: string;
}

@Plugin({ name: 'search', version: '1.0.0', owner: 'team-search' })
class Search {
  @Tool({ name: 'search.find', description: 'Finds.', input: Q })
  async find() {
    await new Promise((r) => setTimeout(r, 30));
    return 'found';
  }
}

@Plugin({ name: 'payments', version: '1.0.0', owner: 'team-payments' })
class Payments {
  @Tool({ name: 'payments.refund', description: 'Refunds.', input: Q })
  refund() {
    return 'refunded';
  }

  @Hook('tool.gate')
  gate(call: ToolCallInfo) {
    return call.tool === 'payments.refund' ? suspend({ message: 'ok?' }) : undefined;
  }
}

@Plugin({ name: 'payments-audit', version: '1.0.0', owner: 'team-payments' })
class PaymentsAudit {
  onInstall(host: PluginHost) {
    host.reportError(new Error('the audit sink is unreachable'), { point: 'app.startup' });
  }
}

@Plugin({ name: 'notes', version: '1.0.0' })
class Notes {
  @Tool({ name: 'notes.add', description: 'Adds a note.', input: Q })
  add() {
    return 'added';
  }
}

/** Hooks and a transform that take time, and a task.end hook that runs after the reply is built. */
@Plugin({ name: 'guard', version: '1.0.0', owner: 'team-safety' })
class Guard {
  @Hook('llm.before')
  async check() {
    await sleep(30);
  }

  @Transform()
  stamp(request: InferenceRequest) {
    const until = performance.now() + 15;
    while (performance.now() < until);
    return request;
  }

  @Hook('task.end')
  async report() {
    await sleep(20);
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const u = (input: number, output: number) => ({ inputTokens: input, outputTokens: output });
const id = () => `call_${randomUUID()}`;

describe('ownership on what a turn spends: records, events, errors, usage.byPlugin and byOwner', () => {
  it("splits tokens by the plugin whose tool results each model call read, tool time by the tool's plugin, and sums by owner", async () => {
    const app = Trellis.create();
    const errors = firstValueFrom(
      app.events$.pipe(
        filter((e): e is Extract<TrellisEvent, { type: 'error' }> => e.type === 'error'),
        take(1),
      ),
    );
    await app.install(PaymentsAudit);
    await app.install(Search);
    await app.install(Payments);
    await app.install(Notes);
    // Round 1: the agent asks for two tools; round 2 reads both results and asks for notes.add; round 3 reads that and answers.
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: id(), name: 'search.find', args: { q: 'a' } },
          { id: id(), name: 'notes.add', args: { q: 'b' } },
        ],
        usage: u(100, 10),
      },
      { toolCalls: [{ id: id(), name: 'notes.add', args: { q: 'c' } }], usage: u(200, 20) },
      { text: 'done', usage: u(300, 30) },
    ]);
    const finished = firstValueFrom(
      app.events$.pipe(
        filter((e) => e.type === 'tool.finished'),
        take(3),
        toArray(),
      ),
    );
    const result = await app.agent({ name: 'desk', model, instructions: '' }).session('a1').send('go');
    expect(result.status).toBe('completed');

    const { byPlugin, byOwner } = result.usage;
    expect(byPlugin!['(agent)']).toMatchObject({ inputTokens: 100, outputTokens: 10, toolCalls: 0 });
    expect(byPlugin!['search']).toMatchObject({ inputTokens: 100, outputTokens: 10, toolCalls: 1 });
    expect(byPlugin!['notes']).toMatchObject({ inputTokens: 400, outputTokens: 40, toolCalls: 2 });
    expect(byPlugin!['search']!.toolMs).toBeGreaterThanOrEqual(25);
    expect(Object.values(byPlugin!).reduce((s, p) => s + p.inputTokens, 0)).toBe(result.usage.inputTokens);
    // team-payments ran no tool, but its gate ran on every call: its time is there, with no tokens.
    expect(Object.keys(byOwner!).sort()).toEqual(['(agent)', '(no owner)', 'team-payments', 'team-search']);
    expect(byOwner!['team-search']).toMatchObject({ inputTokens: 100, toolCalls: 1 });
    expect(byOwner!['team-payments']).toMatchObject({ inputTokens: 0, toolCalls: 0 });
    expect(byPlugin!['payments']!.hookMs).toBeGreaterThan(0);

    expect(result.toolCalls.map((c) => [c.tool, c.plugin, c.owner])).toEqual([
      ['search.find', 'search', 'team-search'],
      ['notes.add', undefined, undefined],
      ['notes.add', undefined, undefined],
    ]);
    // Events come in the order the calls finished (search sleeps), records in call order.
    expect(
      (await finished).map((e) => (e.type === 'tool.finished' ? `${e.tool}:${e.owner ?? '-'}` : null)).sort(),
    ).toEqual(['notes.add:-', 'notes.add:-', 'search.find:team-search']);
    expect(await errors).toMatchObject({
      plugin: 'payments-audit',
      owner: 'team-payments',
      message: 'the audit sink is unreachable',
    });
  });

  it("attributes hook and transform time to the hook's plugin (task.end after the reply included), and model time as tokens are", async () => {
    const app = Trellis.create();
    await app.install(Guard);
    await app.install(Search);
    // Each model call takes 25 ms; round 2 reads search's result.
    const model = new ScriptedModel(
      [
        { toolCalls: [{ id: id(), name: 'search.find', args: { q: 'a' } }], usage: u(10, 1) },
        { text: 'done', usage: u(20, 2) },
      ],
      { delayMs: 25 },
    );
    const result = await app.agent({ name: 'desk', model, instructions: '' }).session('h1').send('go');
    const { byPlugin, byOwner } = result.usage;
    // Two rounds of llm.before (30 ms) and the transform (15 ms), and task.end (20 ms): 110 ms at least.
    expect(byPlugin!['guard']!.hookMs).toBeGreaterThanOrEqual(105);
    expect(byPlugin!['guard']).toMatchObject({ inputTokens: 0, toolCalls: 0, toolMs: 0 });
    expect(byOwner!['team-safety']!.hookMs).toBe(byPlugin!['guard']!.hookMs);
    expect(byPlugin!['search']!.hookMs).toBe(0);
    expect(byPlugin!['search']!.modelMs).toBeGreaterThanOrEqual(20);
    expect(byPlugin!['(agent)']!.modelMs).toBeGreaterThanOrEqual(20);
  });

  it('keeps the split across a suspension, resumed in another app', async () => {
    const store = new MemoryStore();
    const open = async (script: object[]) => {
      const app = Trellis.create({ store });
      await app.install(Search);
      await app.install(Payments);
      return app.agent({ name: 'desk', model: new ScriptedModel(script as never), instructions: '' }).session('a2');
    };
    const callId = id();
    const first = await open([
      { toolCalls: [{ id: id(), name: 'search.find', args: { q: 'a' } }], usage: u(50, 5) },
      { toolCalls: [{ id: callId, name: 'payments.refund', args: { q: 'r' } }], usage: u(70, 7) },
    ]);
    expect((await first.send('refund')).status).toBe('suspended');
    const second = await open([{ text: 'refunded', usage: u(90, 9) }]);
    const result = await second.resume({ decisions: [{ callId, decision: 'approve' }] });
    expect(result.status).toBe('completed');
    expect(result.usage.byPlugin).toMatchObject({
      '(agent)': { inputTokens: 50 },
      search: { inputTokens: 70, toolCalls: 1 },
      payments: { inputTokens: 90, toolCalls: 1 },
    });
    expect(result.usage.byOwner).toMatchObject({
      'team-search': { inputTokens: 70 },
      'team-payments': { inputTokens: 90 },
    });
    // payments' gate ran only before the suspension (an approved call is not gated again): its time was kept.
    expect(result.usage.byPlugin!['payments']!.hookMs).toBeGreaterThan(0);
  });

  it('labels tool metrics and spans of owned plugins with plugin and owner', async () => {
    const exporter = new InMemorySpanExporter();
    const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
    const app = Trellis.create({ providers: [{ provide: OTEL_TRACER_PROVIDER, useValue: provider }] });
    const { instance: metrics } = await app.install(MetricsPlugin, { grants: ['events'] });
    await app.install(OpenTelemetryPlugin, { grants: ['events'] });
    await app.install(Search);
    await app.install(Notes);
    const model = new ScriptedModel([
      {
        toolCalls: [
          { id: id(), name: 'search.find', args: { q: 'a' } },
          { id: id(), name: 'notes.add', args: { q: 'b' } },
        ],
        usage: u(100, 10),
      },
      { text: 'done', usage: u(300, 30) },
    ]);
    await app.agent({ name: 'desk', model, instructions: '' }).session('a3').send('go');
    const text = await metrics.metrics();
    expect(text).toMatch(/tool_latency_seconds_count\{tool="search.find",outcome="ok",owner="team-search"\} 1/);
    expect(text).toMatch(/tool_latency_seconds_count\{tool="notes.add",outcome="ok"\} 1/);
    // Tokens: round 1 is the agent's (no plugin label); round 2 read one result of each plugin: half each.
    expect(text).toMatch(/tokens_total\{model="[^"]+",type="input"\} 100/);
    expect(text).toMatch(/tokens_total\{model="[^"]+",plugin="search",owner="team-search",type="input"\} 150/);
    expect(text).toMatch(/tokens_total\{model="[^"]+",plugin="notes",type="output"\} 15/);
    const spans = exporter.getFinishedSpans();
    const span = spans.find((s) => s.name.includes('search.find'))!;
    expect(span.attributes).toMatchObject({ 'trellis.plugin': 'search', 'trellis.owner': 'team-search' });
    expect(spans.find((s) => s.name.includes('notes.add'))!.attributes['trellis.owner']).toBeUndefined();
    // Model spans name whose results they read; the turn span who spent anything.
    const chats = spans.filter((s) => s.name.startsWith('chat'));
    expect(chats.map((s) => s.attributes['trellis.plugins'])).toEqual([undefined, ['search', 'notes']]);
    expect(chats[1]!.attributes['trellis.owners']).toEqual(['team-search']);
    const turn = spans.find((s) => s.name.startsWith('invoke_agent'))!;
    // otel's own llm.before hook took time too.
    expect(turn.attributes).toMatchObject({
      'trellis.plugins': ['search', 'notes', 'otel'],
      'trellis.owners': ['team-search'],
    });
  });
});
