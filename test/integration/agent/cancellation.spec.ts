import 'reflect-metadata';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  StateKey,
  ScriptedModel,
  MemoryStore,
  type HookContext,
  type ToolContext,
} from '../../../index.js';

class NoInput {}

let toolStarted: () => void = () => undefined;
let toolSawAbort = false;
let afterAbortRuns = 0;

@Plugin({ name: 'cx', version: '1.0.0' })
@StateKey('cx.count', { scope: 'session', merge: 'exclusive', persistent: true })
class CountingPlugin {
  @Hook('task.start')
  start(_v: unknown, ctx: HookContext) {
    ctx.set('cx.count', (ctx.get<number>('cx.count') ?? 0) + 1);
  }

  @Tool({ name: 'cx.slow', description: 'Waits until cancelled. Tests only.', input: NoInput })
  slow(_input: NoInput, ctx: ToolContext) {
    toolStarted();
    return new Promise((_, reject) =>
      ctx.signal.addEventListener('abort', () => {
        toolSawAbort = true;
        reject(new Error('stopped'));
      }),
    );
  }

  @Tool({ name: 'cx.after', description: 'Runs after the slow one. Tests only.', input: NoInput })
  after() {
    afterAbortRuns++;
    return 'ran';
  }
}

beforeEach(() => {
  toolSawAbort = false;
  afterAbortRuns = 0;
});

async function setup(model: ScriptedModel, toolConcurrency = 4) {
  const store = new MemoryStore();
  const app = Trellis.create({ store });
  await app.install(CountingPlugin);
  const session = app.agent({ name: 'cx', model, instructions: 'x', toolConcurrency }).session('s');
  return { app, store, session };
}

describe('cancellation with an AbortSignal', () => {
  it('during a slow model call: cancelled, session state rolled back, nothing appended', async () => {
    const model = new ScriptedModel(['first answer', 'never'], { delayMs: 500 });
    const { store, session } = await setup(model);
    await session.send('one');
    expect(session.values['cx.count']).toBe(1);

    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const started = Date.now();
    const result = await session.send('two', { signal: controller.signal });

    expect(result.status).toBe('cancelled');
    expect(result.error?.code).toBe('Cancelled');
    expect(Date.now() - started).toBeLessThan(450);
    expect(session.values['cx.count']).toBe(1);
    expect(session.transcript.map((m) => m.content)).toEqual(['one', 'first answer']);
    const stored = await store.load('s');
    expect(stored!.transcript).toHaveLength(2);
    expect(stored!.state['cx.count']).toBe(1);
    expect(stored!.turns.map((t) => t.status)).toEqual(['completed', 'cancelled']);
  });

  it('during a tool: the tool sees its signal abort; cancelled, state rolled back, nothing appended', async () => {
    const model = new ScriptedModel([
      {
        toolCalls: [
          { name: 'cx.slow', args: {} },
          { name: 'cx.after', args: {} },
        ],
      },
      'never',
    ]);
    const { session } = await setup(model, 1);
    const controller = new AbortController();
    toolStarted = () => setTimeout(() => controller.abort(), 10);

    const result = await session.send('go', { signal: controller.signal });

    expect(result.status).toBe('cancelled');
    expect(toolSawAbort).toBe(true);
    expect(afterAbortRuns).toBe(0);
    expect(model.calls).toHaveLength(1);
    expect(session.values['cx.count']).toBeUndefined();
    expect(session.transcript).toEqual([]);
  });

  it('during a tool that ignores its signal: the turn still ends cancelled at once', async () => {
    @Plugin({ name: 'deaf', version: '1.0.0' })
    class DeafPlugin {
      @Tool({ name: 'deaf.wait', description: 'Ignores cancellation. Tests only.', input: NoInput })
      wait() {
        return new Promise((resolve) => setTimeout(() => resolve('late'), 2000).unref());
      }
    }
    const app = Trellis.create();
    await app.install(DeafPlugin);
    const model = new ScriptedModel([{ toolCalls: [{ name: 'deaf.wait', args: {} }] }, 'never']);
    const session = app.agent({ name: 'deaf', model, instructions: 'x' }).session('s');
    const controller = new AbortController();
    setTimeout(() => controller.abort(), 30);
    const started = Date.now();

    const result = await session.send('go', { signal: controller.signal });

    expect(result.status).toBe('cancelled');
    expect(Date.now() - started).toBeLessThan(1000);
    expect(model.calls).toHaveLength(1);
    expect(session.transcript).toEqual([]);
  });

  it('an already aborted signal runs no model call', async () => {
    const model = new ScriptedModel(['never']);
    const { session } = await setup(model);
    const result = await session.send('go', { signal: AbortSignal.abort() });
    expect(result.status).toBe('cancelled');
    expect(model.calls).toHaveLength(0);
    expect(session.transcript).toEqual([]);
  });

  it('the session works normally after a cancelled turn', async () => {
    const model = new ScriptedModel(['after cancel'], { delayMs: 50 });
    const { session } = await setup(model);
    await session.send('x', { signal: AbortSignal.abort() });
    const result = await session.send('y');
    expect(result).toMatchObject({ status: 'completed', reply: 'after cancel' });
    expect(session.transcript.map((m) => m.content)).toEqual(['y', 'after cancel']);
    expect(session.values['cx.count']).toBe(1);
  });
});
