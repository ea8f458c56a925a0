import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  ScriptedModel,
  MemoryStore,
  TrellisError,
  type ToolContext,
  type ChatMessage,
  type TrellisEvent,
} from '../../../index.js';
import {
  ContextWindowTransform,
  ModelSummariser,
  SUMMARISER,
  SUMMARY_STATE_KEY,
  SummarisingMemory,
  TRANSCRIPT_EXCHANGES_KEY,
  TranscriptMemory,
  trimToWindow,
  type SummaryRequest,
} from '../../../plugins/memory/index.js';

class EchoInput {
  @IsString() text!: string;
}

@Plugin({ name: 'echo', version: '1.0.0' })
class EchoPlugin {
  @Tool({ name: 'echo.say', description: 'Echoes the text back. Use to repeat something.', input: EchoInput })
  say(input: EchoInput, _ctx: ToolContext) {
    return input.text;
  }
}

const roles = (messages: readonly ChatMessage[]) => messages.map((m) => m.role).join(',');
const instance = <T>(installed: { instance: unknown }) => installed.instance as T;

describe('TranscriptMemory', () => {
  it('records every exchange with its tool calls in a persistent key, without duplicating the request', async () => {
    const store = new MemoryStore();
    const app = Trellis.create({ store });
    const memory = instance<TranscriptMemory>(await app.install(TranscriptMemory));
    await app.install(EchoPlugin);
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'echo.say', args: { text: 'hi' } }] },
      'said hi',
      'fine, thanks',
    ]);
    const session = app.agent({ name: 'a', model, instructions: 'Be brief.' }).session('s1');
    await session.send('say hi');
    await session.send('how are you?');

    const exchanges = memory.exchanges(session);
    expect(exchanges).toHaveLength(2);
    expect(exchanges[0]).toMatchObject({
      turn: 0,
      input: 'say hi',
      reply: 'said hi',
      status: 'completed',
      toolCalls: [{ tool: 'echo.say', ok: true }],
    });
    expect(exchanges[1]).toMatchObject({ turn: 1, input: 'how are you?', reply: 'fine, thanks', toolCalls: [] });
    expect(memory.exchanges(session, 1)).toEqual([exchanges[1]]);
    // The kernel sends the transcript; transcript memory adds nothing to it.
    expect(roles(model.calls[2]!.messages)).toBe('system,user,assistant,tool,assistant,user');
    // Persistent: in the store, and restored for a new app on it.
    expect((await store.load('s1'))!.state[TRANSCRIPT_EXCHANGES_KEY]).toHaveLength(2);
    const next = Trellis.create({ store });
    const memory2 = instance<TranscriptMemory>(await next.install(TranscriptMemory));
    const again = next.agent({ name: 'a', model: new ScriptedModel(['ok']), instructions: 'x' }).session('s1');
    await again.send('third');
    expect(memory2.exchanges(again).map((e) => e.input)).toEqual(['say hi', 'how are you?', 'third']);
  });

  it('lets the model recall earlier exchanges through its tool', async () => {
    const app = Trellis.create();
    await app.install(TranscriptMemory, { config: { recallLimit: 2 } });
    const model = new ScriptedModel([
      'blue is nice',
      'noted: 42',
      { toolCalls: [{ name: 'memory.transcript.recall', args: { contains: 'favourite' } }] },
      'blue',
    ]);
    const session = app.agent({ name: 'a', model, instructions: 'x' }).session('s1');
    await session.send('my favourite colour is blue');
    await session.send('the answer is 42');
    const result = await session.send('what was my favourite colour?');
    expect(result.toolCalls[0]).toMatchObject({
      tool: 'memory.transcript.recall',
      ok: true,
      value: { exchanges: [{ turn: 0, input: 'my favourite colour is blue', reply: 'blue is nice' }] },
    });
  });

  it('keeps at most maxExchanges, oldest dropped first', async () => {
    const app = Trellis.create();
    const memory = instance<TranscriptMemory>(await app.install(TranscriptMemory, { config: { maxExchanges: 2 } }));
    const session = app
      .agent({ name: 'a', model: new ScriptedModel(['1', '2', '3']), instructions: 'x' })
      .session('s1');
    for (const m of ['a', 'b', 'c']) await session.send(m);
    expect(memory.exchanges(session).map((e) => e.input)).toEqual(['b', 'c']);
  });

  it('refuses bad config, naming every bad field', async () => {
    const error = await Trellis.create()
      .install(TranscriptMemory, { config: { maxExchanges: 0, recordToolCalls: 'no', recallLimit: 1.5 } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    for (const field of ['maxExchanges', 'recordToolCalls', 'recallLimit'])
      expect((error as Error).message).toContain(field);
  });
});

describe('SummarisingMemory', () => {
  it('folds turns older than keepTurns into a summary and sends it instead of them', async () => {
    const asked: SummaryRequest[] = [];
    const summariser = (request: SummaryRequest) => {
      asked.push(request);
      return `${request.previous ? `${request.previous}; ` : ''}${request.exchanges.map((e) => `${e.input}->${e.reply}`).join('; ')}`;
    };
    const store = new MemoryStore();
    const app = Trellis.create({ store, providers: [{ provide: SUMMARISER, useValue: summariser }] });
    await app.install(SummarisingMemory, { config: { keepTurns: 1, summaryMaxTokens: 100 } });
    const model = new ScriptedModel(['r0', 'r1', 'r2', 'r3']);
    const session = app.agent({ name: 'a', model, instructions: 'Be brief.' }).session('s1');
    for (const m of ['m0', 'm1', 'm2', 'm3']) await session.send(m);

    expect(asked.map((r) => r.exchanges.map((e) => e.input))).toEqual([['m0'], ['m1'], ['m2']]);
    expect(asked[1]!.previous).toBe('m0->r0');
    expect(model.calls[1]!.messages).toHaveLength(4); // nothing folded yet: system, m0, r0, m1
    const third = model.calls[2]!.messages;
    expect(third.map((m) => m.content)).toEqual([
      'Be brief.',
      'Summary of the earlier conversation (1 exchange):\nm0->r0',
      'm1',
      'r1',
      'm2',
    ]);
    const fourth = model.calls[3]!.messages;
    expect(fourth[1]!.content).toContain('m0->r0; m1->r1');
    expect(fourth.slice(2).map((m) => m.content)).toEqual(['m2', 'r2', 'm3']);
    expect((await store.load('s1'))!.state[SUMMARY_STATE_KEY]).toMatchObject({
      folded: 3,
      recent: [{ input: 'm3', reply: 'r3' }],
    });
  });

  it('summarises with a model through ModelSummariser, cutting the summary to the budget', async () => {
    const summaryModel = new ScriptedModel(['x'.repeat(500)], { name: 'summariser' });
    const app = Trellis.create({ providers: [{ provide: SUMMARISER, useValue: new ModelSummariser(summaryModel) }] });
    await app.install(SummarisingMemory, { config: { keepTurns: 0, summaryMaxTokens: 20 } });
    const model = new ScriptedModel(['r0', 'r1']);
    const session = app.agent({ name: 'a', model, instructions: 'sys' }).session('s1');
    await session.send('remember 7');
    await session.send('what number?');
    expect(summaryModel.calls[0]!.messages[1]!.content).toContain('User: remember 7\nAssistant: r0');
    expect(summaryModel.calls[0]!.inference.maxTokens).toBe(20);
    const summary = model.calls[1]!.messages[1]!.content;
    expect(summary.length).toBeLessThanOrEqual('Summary of the earlier conversation (1 exchange):\n'.length + 80);
    expect(roles(model.calls[1]!.messages)).toBe('system,system,user');
  });

  it('keeps the turn going when the summariser fails, and reports it', async () => {
    const app = Trellis.create({
      providers: [
        {
          provide: SUMMARISER,
          useValue: () => {
            throw new Error('no model');
          },
        },
      ],
    });
    await app.install(SummarisingMemory, { config: { keepTurns: 0 } });
    const events: TrellisEvent[] = [];
    app.events$.subscribe((e) => events.push(e));
    const result = await app
      .agent({ name: 'a', model: new ScriptedModel(['ok']), instructions: 'x' })
      .session('s1')
      .send('hi');
    expect(result.status).toBe('completed');
    expect(events).toContainEqual(
      expect.objectContaining({ type: 'error', code: 'SummaryFailed', plugin: 'memory.summary' }),
    );
  });

  it('refuses to install without a summariser, and refuses bad config naming every field', async () => {
    const missing = await Trellis.create()
      .install(SummarisingMemory)
      .catch((e: unknown) => e);
    expect((missing as Error).message).toContain('SUMMARISER');
    const app = Trellis.create({ providers: [{ provide: SUMMARISER, useValue: () => '' }] });
    const error = await app
      .install(SummarisingMemory, { config: { keepTurns: -1, summaryMaxTokens: 'big' } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    expect((error as Error).message).toContain('keepTurns');
    expect((error as Error).message).toContain('summaryMaxTokens');
  });
});

describe('ContextWindowTransform', () => {
  it('trims the request oldest first, keeping the system message and the whole latest turn', async () => {
    const app = Trellis.create();
    await app.install(EchoPlugin);
    await app.install(ContextWindowTransform, { config: { maxTokens: 60 } });
    const long = 'x'.repeat(80); // 20 tokens
    const model = new ScriptedModel([
      { toolCalls: [{ id: 't1', name: 'echo.say', args: { text: long } }] },
      `first ${long}`,
      `second ${long}`,
      { toolCalls: [{ id: 't3', name: 'echo.say', args: { text: 'z' } }] },
      'third',
    ]);
    const session = app.agent({ name: 'a', model, instructions: 'System rules.' }).session('s1');
    await session.send('one');
    await session.send('two');
    const result = await session.send('three');
    expect(result.status).toBe('completed');

    // Turn 3, round 2: the oldest turn (with its tool call and result) is gone, never a tool message alone.
    const last = model.calls[4]!.messages;
    expect(last[0]).toMatchObject({ role: 'system', content: 'System rules.' });
    expect(last.map((m) => m.content).slice(-3)).toEqual(['three', '', expect.stringContaining('z')]);
    expect(last.some((m) => m.content === 'one')).toBe(false);
    expect(last.some((m) => m.role === 'tool' && m.toolCallId === 't1')).toBe(false);
    expect(last.map((m) => m.role).join(',')).toBe('system,user,assistant,user,assistant,tool');
    expect(last[1]).toMatchObject({ role: 'user', content: 'two' });
    const total = last.reduce(
      (n, m) =>
        n +
        Math.ceil(
          (m.content.length + (m.toolCalls ?? []).reduce((k, c) => k + c.name.length + c.arguments.length, 0)) / 4,
        ),
      0,
    );
    expect(total).toBeLessThanOrEqual(60);
    // A request that fits is sent unchanged.
    expect(model.calls[0]!.messages.map((m) => m.content)).toEqual(['System rules.', 'one']);
  });

  it('drops a tool-call group as a whole and never leaves a tool message first', () => {
    const messages: ChatMessage[] = [
      { role: 'system', content: 'sys' },
      { role: 'user', content: 'old question' },
      {
        role: 'assistant',
        content: '',
        toolCalls: [
          { id: 'a', name: 't', arguments: '{}' },
          { id: 'b', name: 't', arguments: '{}' },
        ],
      },
      { role: 'tool', toolCallId: 'a', content: 'r'.repeat(40) },
      { role: 'tool', toolCallId: 'b', content: 'r'.repeat(40) },
      { role: 'assistant', content: 'old answer' },
      { role: 'user', content: 'mid question' },
      { role: 'assistant', content: 'mid answer' },
      { role: 'user', content: 'new question' },
    ];
    expect(trimToWindow(messages, 1000)).toBe(messages);
    expect(trimToWindow(messages, 12).map((m) => m.content)).toEqual([
      'sys',
      'mid question',
      'mid answer',
      'new question',
    ]);
    expect(trimToWindow(messages, 1).map((m) => m.content)).toEqual(['sys', 'new question']);
    const orphan: ChatMessage[] = [
      { role: 'system', content: 's' },
      { role: 'tool', toolCallId: 'zz', content: 'lost' },
      { role: 'user', content: 'q'.repeat(8) },
    ];
    expect(trimToWindow(orphan, 3).map((m) => m.role)).toEqual(['system', 'user']);
  });

  it('refuses bad config, naming every bad field', async () => {
    const error = await Trellis.create()
      .install(ContextWindowTransform, { config: { maxTokens: 0, charsPerToken: -2 } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    expect((error as Error).message).toContain('maxTokens');
    expect((error as Error).message).toContain('charsPerToken');
  });
});
