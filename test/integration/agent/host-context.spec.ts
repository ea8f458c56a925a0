import 'reflect-metadata';
import { MemoryStore, Plugin, Requires, ScriptedModel, Tool, Trellis, type ToolContext } from '../../../index.js';

class NoInput {}

@Plugin({ name: 'who', version: '1.0.0' })
class Who {
  @Tool({ name: 'who.scopes', description: 'Says the caller scopes. Use in tests.', input: NoInput })
  @Requires({ key: 'app.scopes', optional: true })
  scopes(_input: NoInput, ctx: ToolContext) {
    return JSON.stringify(ctx.deps['app.scopes'] ?? null);
  }
}

const ask = { toolCalls: [{ name: 'who.scopes', args: {} }] };

async function open(store: MemoryStore, replies: (string | object)[]) {
  const app = Trellis.create({ store });
  await app.install(Who);
  const model = new ScriptedModel(replies);
  return { agent: app.agent({ name: 'a', model, instructions: 'x' }), model };
}

/** What the tool answered in the latest round the model saw. */
const lastToolAnswer = (model: ScriptedModel) =>
  model.calls
    .at(-1)!
    .messages.filter((m) => m.role === 'tool')
    .at(-1)!.content;

describe("host context is the host's statement about this request", () => {
  it('is never read back from the store: a reopened session has only what the host says now', async () => {
    const store = new MemoryStore();
    const first = await open(store, [ask, 'ok']);
    await first.agent.session('s1', { context: { 'app.scopes': ['admin'] } }).send('who am I');
    expect(lastToolAnswer(first.model)).toBe('["admin"]');
    expect(JSON.stringify((await store.load('s1'))!.state)).not.toContain('admin');

    const second = await open(store, [ask, 'ok']);
    await second.agent.session('s1', { context: {} }).send('who am I now');
    expect(lastToolAnswer(second.model)).toBe('null');
  });

  it('is replaced when an open session is opened again with other context', async () => {
    const { agent, model } = await open(new MemoryStore(), [ask, 'ok', ask, 'ok']);
    const session = agent.session('s1', { context: { 'app.scopes': ['admin'] } });
    await session.send('first');
    expect(lastToolAnswer(model)).toBe('["admin"]');

    expect(agent.session('s1', { context: { 'app.scopes': ['read'] } })).toBe(session);
    await session.send('second');
    expect(lastToolAnswer(model)).toBe('["read"]');
  });
});
