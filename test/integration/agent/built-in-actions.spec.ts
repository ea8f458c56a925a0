import 'reflect-metadata';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  ScriptedModel,
  type HookContext,
  type PluginClass,
  type ScriptedReply,
} from '../../../index.js';
import { BuiltInActions } from '../../../plugin.js';

class NoInput {}

@Plugin({ name: 'kit', version: '1.0.0' })
class KitPlugin {
  @Tool({ name: 'kit.alpha', description: 'Alpha. Tests only.', input: NoInput }) alpha() {
    return 'a';
  }
  @Tool({ name: 'kit.beta', description: 'Beta. Tests only.', input: NoInput }) beta() {
    return 'b';
  }
  @Tool({ name: 'kit.gamma', description: 'Gamma. Tests only.', input: NoInput }) gamma() {
    return 'c';
  }
  @Tool({ name: 'kit.delta', description: 'Delta. Tests only.', input: NoInput }) delta() {
    return 'd';
  }
}

/** Runs `fn` at `point`, round by round: `fn(ctx, round)` where round counts calls at that point from 1. */
function actionsAt(
  point: 'planning.started' | 'task.start' | 'memory.read' | 'tool.after_call',
  fn: (ctx: HookContext, round: number) => void,
): PluginClass {
  let seen = 0;
  @Plugin({ name: 'policy', version: '1.0.0' })
  class PolicyPlugin {
    @Hook(point)
    at(_value: unknown, ctx: HookContext) {
      fn(ctx, ++seen);
      return undefined;
    }
  }
  return PolicyPlugin;
}

async function run(policies: PluginClass[], script: ScriptedReply[], inference?: Record<string, unknown>) {
  const app = Trellis.create();
  await app.install(KitPlugin);
  for (const policy of policies) await app.install(policy);
  const model = new ScriptedModel(script);
  const result = await app.agent({ name: 'k', model, instructions: 'Base.', inference }).session('s').send('hello');
  return { result, model };
}

const twoRounds: ScriptedReply[] = [{ toolCalls: [{ name: 'kit.alpha', args: {} }] }, 'done'];

describe('AddContextMessage', () => {
  it('scheduled at planning.started, appears in every model request of the turn, after the system prompt', async () => {
    const policy = actionsAt('planning.started', (ctx) =>
      ctx.schedule(BuiltInActions.AddContextMessage, 'Answer in French.'),
    );
    const { model } = await run([policy], twoRounds);

    for (const request of model.calls) {
      expect(request.messages.slice(0, 3)).toEqual([
        { role: 'system', content: 'Base.' },
        { role: 'system', content: 'Answer in French.' },
        { role: 'user', content: 'hello' },
      ]);
    }
  });

  it('does not leak into the next turn', async () => {
    const app = Trellis.create();
    let turn = 0;
    @Plugin({ name: 'once', version: '1.0.0' })
    class Once {
      @Hook('planning.started') plan(_i: string, ctx: HookContext) {
        if (turn++ === 0) ctx.schedule(BuiltInActions.AddContextMessage, { role: 'system', content: 'Only now.' });
      }
    }
    await app.install(Once);
    const model = new ScriptedModel(['one', 'two']);
    const session = app.agent({ name: 'k', model, instructions: 'Base.' }).session('s');
    await session.send('a');
    await session.send('b');
    expect(model.calls[0]!.messages.map((m) => m.content)).toContain('Only now.');
    expect(model.calls[1]!.messages.map((m) => m.content)).not.toContain('Only now.');
  });
});

describe('SetInferenceOverride', () => {
  const agentDefaults = { temperature: 0.1, maxTokens: 100, topP: 0.9 };

  it('merges a turn override over the agent defaults field by field, for every round', async () => {
    const policy = actionsAt('task.start', (ctx) =>
      ctx.schedule(BuiltInActions.SetInferenceOverride, { temperature: 0.7 }),
    );
    const { model } = await run([policy], twoRounds, agentDefaults);

    expect(model.calls.map((c) => c.inference)).toEqual([
      { temperature: 0.7, maxTokens: 100, topP: 0.9 },
      { temperature: 0.7, maxTokens: 100, topP: 0.9 },
    ]);
  });

  it('a round override applies to that round only, over the turn override', async () => {
    const policy = actionsAt('memory.read', (ctx, round) => {
      if (round === 1) {
        ctx.schedule(BuiltInActions.SetInferenceOverride, { temperature: 0.5, scope: 'turn' });
        ctx.schedule(BuiltInActions.SetInferenceOverride, { maxTokens: 10, temperature: 0.9, scope: 'round' });
      }
    });
    const { model } = await run([policy], twoRounds, agentDefaults);

    expect(model.calls[0]!.inference).toEqual({ temperature: 0.9, maxTokens: 10, topP: 0.9 });
    expect(model.calls[1]!.inference).toEqual({ temperature: 0.5, maxTokens: 100, topP: 0.9 });
  });

  it('a round override set after a model call (tool.after_call) applies to the next model call only', async () => {
    const policy = actionsAt('tool.after_call', (ctx, seen) => {
      if (seen === 1) ctx.schedule(BuiltInActions.SetInferenceOverride, { temperature: 1, scope: 'round' });
    });
    const script: ScriptedReply[] = [
      { toolCalls: [{ name: 'kit.alpha', args: {} }] },
      { toolCalls: [{ name: 'kit.beta', args: {} }] },
      'done',
    ];
    const { model } = await run([policy], script, agentDefaults);

    expect(model.calls.map((c) => c.inference)).toEqual([
      agentDefaults,
      { ...agentDefaults, temperature: 1 },
      agentDefaults,
    ]);
  });

  it('a round override set before the first round (planning.started) applies to round one only', async () => {
    const policy = actionsAt('planning.started', (ctx) =>
      ctx.schedule(BuiltInActions.SetInferenceOverride, { topP: 0.2, scope: 'round' }),
    );
    const { model } = await run([policy], twoRounds, agentDefaults);

    expect(model.calls[0]!.inference).toEqual({ ...agentDefaults, topP: 0.2 });
    expect(model.calls[1]!.inference).toEqual(agentDefaults);
  });
});

describe('IncludeOnlyTools and ExcludeTool', () => {
  const offered = (tools: readonly { name: string }[]) => tools.map((t) => t.name).sort();

  it('unions the include lists of several plugins, then applies exclusions', async () => {
    const includeA = actionsAt('task.start', (ctx) =>
      ctx.schedule(BuiltInActions.IncludeOnlyTools, ['kit.alpha', 'kit.beta']),
    );
    @Plugin({ name: 'policy2', version: '1.0.0' })
    class Second {
      @Hook('task.start') start(_v: unknown, ctx: HookContext) {
        ctx.schedule(BuiltInActions.IncludeOnlyTools, 'kit.gamma');
        ctx.schedule(BuiltInActions.ExcludeTool, 'kit.beta');
      }
    }
    const { model } = await run([includeA, Second], ['ok']);

    expect(offered(model.calls[0]!.tools)).toEqual(['kit.alpha', 'kit.gamma']);
  });

  it('a round-scoped exclusion lasts one round; a call to the excluded tool in that round is ToolNotFound', async () => {
    const policy = actionsAt('memory.read', (ctx, round) => {
      if (round === 1) ctx.schedule(BuiltInActions.ExcludeTool, { tools: ['kit.delta'], scope: 'round' });
    });
    const { model, result } = await run([policy], [{ toolCalls: [{ name: 'kit.delta', args: {} }] }, 'ok']);

    expect(offered(model.calls[0]!.tools)).toEqual(['kit.alpha', 'kit.beta', 'kit.gamma']);
    expect(offered(model.calls[1]!.tools)).toEqual(['kit.alpha', 'kit.beta', 'kit.delta', 'kit.gamma']);
    expect(result.toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolNotFound' } });
  });
});
