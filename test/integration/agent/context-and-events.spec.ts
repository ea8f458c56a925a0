import 'reflect-metadata';
import { IsString } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  Requires,
  ScriptedModel,
  TrellisError,
  type HookContext,
  type ToolContext,
  type TrellisEvent,
} from '../../../index.js';

class FindInput {
  @IsString() q!: string;
}

let users: unknown[] = [];

@Plugin({ name: 'look', version: '1.0.0' })
class LookupPlugin {
  @Tool({ name: 'look.find', description: 'Finds things for the user. Tests only.', input: FindInput })
  @Requires('app.user_id')
  find(input: FindInput, ctx: ToolContext) {
    users.push(ctx.deps['app.user_id']);
    return { hits: [`${input.q}-1`], user: ctx.get('app.user_id') };
  }
}

/** What the reader plugin saw of `look.find.result`, per round. */
let seenResults: unknown[] = [];
let undeclaredRead: string | undefined;

@Plugin({ name: 'reader', version: '1.0.0' })
class ReaderPlugin {
  @Hook('memory.read')
  @Requires({ key: 'look.find.result', optional: true })
  read(_payload: unknown, ctx: HookContext) {
    seenResults.push(ctx.deps['look.find.result']);
    return [];
  }
}

@Plugin({ name: 'nosy', version: '1.0.0' })
class NosyPlugin {
  @Hook('llm.after')
  peek(_response: unknown, ctx: HookContext) {
    try {
      ctx.get('look.find.result');
      undeclaredRead = 'allowed';
    } catch (error) {
      undeclaredRead = TrellisError.is(error) ? error.code : 'other';
    }
  }
}

const findThenAnswer = () =>
  new ScriptedModel([{ toolCalls: [{ name: 'look.find', args: { q: 'cats' } }] }, 'Found cats.']);

beforeEach(() => {
  users = [];
  seenResults = [];
  undeclaredRead = undefined;
});

describe('declared context', () => {
  it('a tool @Requires a host key and gets it from the session context', async () => {
    const app = Trellis.create();
    await app.install(LookupPlugin);
    const session = app
      .agent({ name: 'c', model: findThenAnswer(), instructions: 'x' })
      .session('s', { context: { 'app.user_id': 'u-42' } });

    const result = await session.send('find cats');

    expect(users).toEqual(['u-42']);
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: { hits: ['cats-1'], user: 'u-42' } });
  });

  it('turn-level context given to send() is nearer than the session level', async () => {
    const app = Trellis.create();
    await app.install(LookupPlugin);
    const session = app
      .agent({ name: 'c', model: findThenAnswer(), instructions: 'x' })
      .session('s', { context: { 'app.user_id': 'u-42' } });
    await session.send('find cats', { context: { 'app.user_id': 'u-7' } });
    expect(users).toEqual(['u-7']);
  });

  it('a missing required key is a MissingContext result naming the key; the tool does not run', async () => {
    const app = Trellis.create();
    await app.install(LookupPlugin);
    const model = findThenAnswer();
    const session = app.agent({ name: 'c', model, instructions: 'x' }).session('s');

    const result = await session.send('find cats');

    expect(result.status).toBe('completed');
    expect(users).toEqual([]);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'MissingContext' } });
    const seen = JSON.parse(model.calls[1]!.messages.find((m) => m.role === 'tool')!.content) as {
      error: { code: string; message: string };
    };
    expect(seen.error.code).toBe('MissingContext');
    expect(seen.error.message).toContain("'app.user_id'");
    expect(seen.error.message).toMatch(/session/);
  });

  it('input is validated before context is resolved: bad arguments and a missing key give ToolInput', async () => {
    const app = Trellis.create();
    await app.install(LookupPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'look.find', args: { q: 5 } }] }, 'ok']);
    const result = await app.agent({ name: 'c', model, instructions: 'x' }).session('s').send('go');
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolInput' } });
  });

  it("a tool's result is recorded as <tool>.result at turn level, readable next round by a plugin that declares it", async () => {
    const app = Trellis.create();
    await app.install(LookupPlugin);
    await app.install(ReaderPlugin);
    await app.install(NosyPlugin);
    const session = app
      .agent({ name: 'c', model: findThenAnswer(), instructions: 'x' })
      .session('s', { context: { 'app.user_id': 'u-1' } });

    await session.send('find cats');

    expect(seenResults).toEqual([undefined, { hits: ['cats-1'], user: 'u-1' }]);
    expect(undeclaredRead).toBe('ContextAccess');
  });

  it('<tool>.result does not outlive the turn', async () => {
    const app = Trellis.create();
    await app.install(LookupPlugin);
    await app.install(ReaderPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'look.find', args: { q: 'a' } }] }, 'one', 'two']);
    const session = app
      .agent({ name: 'c', model, instructions: 'x' })
      .session('s', { context: { 'app.user_id': 'u-1' } });
    await session.send('first');
    await session.send('second');
    expect(seenResults).toHaveLength(3);
    expect(seenResults[2]).toBeUndefined();
  });
});

describe('session.events$', () => {
  it('streams rounds, model text deltas and tool calls with durations, in order', async () => {
    const app = Trellis.create();
    @Plugin({ name: 'slow', version: '1.0.0' })
    class SlowPlugin {
      @Tool({ name: 'slow.op', description: 'Takes 20 ms. Tests only.', input: FindInput })
      async op() {
        await new Promise((r) => setTimeout(r, 20));
        return 'done';
      }
    }
    await app.install(SlowPlugin);
    const model = new ScriptedModel([
      { toolCalls: [{ name: 'slow.op', args: { q: 'x' }, id: 'k1' }] },
      'The answer is here.',
    ]);
    const session = app.agent({ name: 'c', model, instructions: 'x' }).session('s');
    const events: TrellisEvent[] = [];
    session.events$.subscribe((e) => events.push(e));

    await session.send('go');

    const kinds = events.map((e) => e.type).filter((t) => t !== 'model.delta');
    expect(kinds).toEqual([
      'turn.started',
      'round.started',
      'round.finished',
      'tool.started',
      'tool.finished',
      'round.started',
      'round.finished',
      'turn.finished',
    ]);
    const finished = events.find((e) => e.type === 'tool.finished') as Extract<TrellisEvent, { type: 'tool.finished' }>;
    expect(finished).toMatchObject({ callId: 'k1', tool: 'slow.op', ok: true });
    expect(finished.durationMs).toBeGreaterThanOrEqual(15);
    expect(events.find((e) => e.type === 'round.finished')).toMatchObject({ round: 1, model: 'scripted' });
    // The text of round 2 arrives in pieces between its round boundaries.
    const secondRound = events.slice(events.findIndex((e, i) => e.type === 'round.started' && i > 2));
    const text = secondRound
      .filter((e): e is Extract<TrellisEvent, { type: 'model.delta' }> => e.type === 'model.delta')
      .map((e) => (e.delta.type === 'text' ? e.delta.text : ''));
    expect(text.length).toBeGreaterThan(1);
    expect(text.join('')).toBe('The answer is here.');
    expect(events.every((e) => !('sessionId' in e) || e.sessionId === 's')).toBe(true);
  });

  it("one session's stream does not carry another session's events", async () => {
    const app = Trellis.create();
    const agent = app.agent({ name: 'c', model: new ScriptedModel(['a', 'b']), instructions: 'x' });
    const one = agent.session('one');
    const two = agent.session('two');
    const seen: TrellisEvent[] = [];
    one.events$.subscribe((e) => seen.push(e));
    await two.send('hi');
    expect(seen).toEqual([]);
  });
});
