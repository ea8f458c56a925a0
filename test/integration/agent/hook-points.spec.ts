import 'reflect-metadata';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  StateKey,
  ScriptedModel,
  block,
  cancel,
  type HookContext,
  type ToolCallInfo,
  type ModelResponse,
  type ChatMessage,
  type PluginClass,
  type ScriptedReply,
} from '../../../index.js';

class NoInput {}

let ran: string[] = [];
let taskEnds: { status: string }[] = [];

@Plugin({ name: 'work', version: '1.0.0' })
class WorkPlugin {
  @Tool({ name: 'work.do', description: 'Does work. Tests only.', input: NoInput })
  do() {
    ran.push('work.do');
    return 'worked';
  }
}

@Plugin({ name: 'extra', version: '1.0.0' })
class ExtraPlugin {
  @Tool({ name: 'extra.tool', description: 'Only offered when registered. Tests only.', input: NoInput })
  tool() {
    ran.push('extra.tool');
    return 'extra';
  }
}

@Plugin({ name: 'watch', version: '1.0.0' })
class TaskEndWatcher {
  @Hook('task.end') end(payload: { status: string }) {
    taskEnds.push(payload);
  }
}

function hookPlugin(point: Parameters<typeof Hook>[0], fn: (value: any, ctx: HookContext) => unknown): PluginClass {
  @Plugin({ name: 'policy', version: '1.0.0' })
  @StateKey('policy.touched', { scope: 'session', merge: 'exclusive' })
  class PolicyPlugin {
    @Hook(point) at(value: unknown, ctx: HookContext) {
      return fn(value, ctx);
    }
  }
  return PolicyPlugin;
}

async function run(plugin: PluginClass, script: ScriptedReply[], plugins?: string[]) {
  const app = Trellis.create();
  await app.install(WorkPlugin);
  await app.install(ExtraPlugin);
  await app.install(TaskEndWatcher);
  await app.install(plugin);
  const model = new ScriptedModel(script);
  const session = app.agent({ name: 'h', model, instructions: 'x', plugins }).session('s');
  const result = await session.send('hello');
  return { app, model, session, result };
}

const workThenAnswer: ScriptedReply[] = [{ toolCalls: [{ name: 'work.do', args: {} }] }, 'answer'];

beforeEach(() => {
  ran = [];
  taskEnds = [];
});

describe('message.received', () => {
  it("block(reason) ends the turn 'blocked' before the model is asked or task.start runs", async () => {
    const { model, result, session } = await run(
      hookPlugin('message.received', () => block('spam')),
      ['never'],
    );
    expect(result).toMatchObject({ status: 'blocked', rounds: 0, error: { code: 'Blocked', message: 'spam' } });
    expect(model.calls).toHaveLength(0);
    expect(taskEnds).toEqual([]);
    expect(session.transcript).toEqual([]);
  });

  it('a returned string replaces the message the model sees', async () => {
    const { model } = await run(
      hookPlugin('message.received', (m: string) => m.toUpperCase()),
      ['ok'],
    );
    expect(model.calls[0]!.messages.at(-1)).toEqual({ role: 'user', content: 'HELLO' });
  });
});

describe('a throwing hook', () => {
  it('fails the turn with a typed error naming the plugin and the point; nothing is appended; task.end still runs', async () => {
    const plugin = hookPlugin('llm.after', (_r, ctx) => {
      ctx.set('policy.touched', true);
      throw new Error('hook exploded');
    });
    const app = Trellis.create();
    await app.install(TaskEndWatcher);
    @Plugin({ name: 'toucher', version: '1.0.0' })
    @StateKey('toucher.seen', { scope: 'session', merge: 'exclusive' })
    class Toucher {
      @Hook('task.start') start(_v: unknown, ctx: HookContext) {
        ctx.set('toucher.seen', true);
      }
    }
    await app.install(Toucher);
    await app.install(plugin);
    const session = app.agent({ name: 'h', model: new ScriptedModel(['x']), instructions: 'x' }).session('s');

    const result = await session.send('hello');

    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/policy/);
    expect(result.error?.message).toMatch(/llm\.after/);
    expect(result.error?.message).toMatch(/hook exploded/);
    // A failed turn keeps what it committed (each commit was whole); only a cancelled one rolls back.
    expect(session.values['toucher.seen']).toBe(true);
    expect(session.transcript).toEqual([]);
    expect(taskEnds).toEqual([expect.objectContaining({ status: 'failed' })]);
  });
});

describe('tool.before_call', () => {
  it('block(reason) stops that call with a Blocked result; the turn goes on', async () => {
    const { model, result } = await run(
      hookPlugin('tool.before_call', (call: ToolCallInfo) => (call.tool === 'work.do' ? block('not now') : undefined)),
      workThenAnswer,
    );
    expect(ran).toEqual([]);
    expect(result.status).toBe('completed');
    const seen = JSON.parse(model.calls[1]!.messages.find((m) => m.role === 'tool')!.content) as {
      error: { code: string; message: string };
    };
    expect(seen.error.code).toBe('Blocked');
    expect(seen.error.message).toContain('not now');
  });

  it('may rewrite the call arguments before validation', async () => {
    @Plugin({ name: 'argy', version: '1.0.0' })
    class Argy {
      @Tool({ name: 'argy.echo', description: 'Echoes. Tests only.', input: NoInput })
      echo(input: NoInput) {
        return input;
      }
    }
    const app = Trellis.create();
    await app.install(Argy);
    await app.install(hookPlugin('tool.before_call', (call: ToolCallInfo) => ({ ...call, args: {} })));
    const model = new ScriptedModel([{ toolCalls: [{ name: 'argy.echo', args: { unexpected: 1 } }] }, 'ok']);
    const result = await app.agent({ name: 'h', model, instructions: 'x' }).session('s').send('go');
    expect(result.toolCalls[0]).toMatchObject({ ok: true });
  });
});

describe('memory.read, tool.register, tool.select, llm.after', () => {
  it('memory.read contributions appear in the request before the transcript', async () => {
    const recalled: ChatMessage = { role: 'system', content: 'User likes cats.' };
    const { model } = await run(
      hookPlugin('memory.read', () => [recalled]),
      ['ok'],
    );
    expect(model.calls[0]!.messages).toEqual([
      { role: 'system', content: 'x' },
      recalled,
      { role: 'user', content: 'hello' },
    ]);
  });

  it("tool.register adds a tool of a plugin outside the agent's filter, for that round, and it can be called", async () => {
    const { model, result } = await run(
      hookPlugin('tool.register', () => 'extra.tool'),
      [{ toolCalls: [{ name: 'extra.tool', args: {} }] }, 'ok'],
      ['work', 'policy', 'watch'],
    );
    expect(model.calls[0]!.tools.map((t) => t.name)).toEqual(['work.do', 'extra.tool']);
    expect(ran).toEqual(['extra.tool']);
    expect(result.toolCalls[0]).toMatchObject({ ok: true, value: 'extra' });
  });

  it("without tool.register, a filtered-out plugin's tools are not offered", async () => {
    const { model } = await run(
      hookPlugin('task.start', () => undefined),
      ['ok'],
      ['work', 'policy'],
    );
    expect(model.calls[0]!.tools.map((t) => t.name)).toEqual(['work.do']);
  });

  it('tool.select may narrow the candidate list', async () => {
    const { model } = await run(
      hookPlugin('tool.select', (tools: { name: string }[]) => tools.filter((t) => t.name !== 'work.do')),
      ['ok'],
    );
    expect(model.calls[0]!.tools.map((t) => t.name)).toEqual(['extra.tool']);
  });

  it('llm.after may rewrite the response before the loop acts on it', async () => {
    const { result } = await run(
      hookPlugin('llm.after', (r: ModelResponse) => ({ ...r, toolCalls: [], text: 'rewritten' })),
      workThenAnswer,
    );
    expect(result).toMatchObject({ status: 'completed', reply: 'rewritten', rounds: 1 });
    expect(ran).toEqual([]);
  });
});

describe('message.sending', () => {
  it('a returned string replaces the reply, in the result and the transcript', async () => {
    const { result, session } = await run(
      hookPlugin('message.sending', (reply: string) => `${reply} (checked)`),
      ['answer'],
    );
    expect(result.reply).toBe('answer (checked)');
    expect(session.transcript.at(-1)).toEqual({ role: 'assistant', content: 'answer (checked)' });
  });

  it("cancel(reason) ends the turn 'cancelled' with no reply; the cancelled reply is not in the transcript", async () => {
    const { result, session } = await run(
      hookPlugin('message.sending', () => cancel('unsafe')),
      ['answer'],
    );
    expect(result).toMatchObject({
      status: 'cancelled',
      reply: undefined,
      error: { code: 'ReplyCancelled', message: 'unsafe' },
    });
    expect(session.transcript).toEqual([]);
    expect(taskEnds).toEqual([expect.objectContaining({ status: 'cancelled' })]);
  });
});

describe('task.end', () => {
  it.each<[string, ScriptedReply[], string]>([
    ['completed', ['ok'], 'completed'],
    ['failed', [new Error('model down') as never], 'failed'],
  ])('runs once when the turn %s', async (_what, script, status) => {
    await run(
      hookPlugin('task.start', () => undefined),
      script,
    );
    expect(taskEnds).toEqual([expect.objectContaining({ status })]);
  });
});
