import 'reflect-metadata';
import { IsInt } from 'class-validator';
import {
  Trellis,
  Plugin,
  Tool,
  Hook,
  Requires,
  StateKey,
  ScriptedModel,
  type HookContext,
  type ToolContext,
} from '../../../index.js';

class StepInput {
  @IsInt() n!: number;
}

let inFlight = 0;
let maxInFlight = 0;
let promotedSeen: unknown[] = [];

@Plugin({ name: 'st', version: '1.0.0' })
@StateKey('st.total', { scope: 'session', merge: 'exclusive' })
@StateKey('st.scratch', { scope: 'execution', merge: 'exclusive' })
@StateKey('st.kept', { scope: 'execution', merge: 'exclusive' })
class StatefulPlugin {
  @Tool({ name: 'st.add', description: 'Adds n to the total; fails for negative n. Tests only.', input: StepInput })
  add(input: StepInput, ctx: ToolContext) {
    ctx.set('st.total', (ctx.get<number>('st.total') ?? 0) + input.n);
    if (input.n < 0) throw new Error('negative');
    return 'added';
  }

  @Tool({ name: 'st.note', description: 'Writes execution values; promotes one. Tests only.', input: StepInput })
  note(input: StepInput, ctx: ToolContext) {
    ctx.set('st.scratch', input.n);
    ctx.set('st.kept', input.n * 10);
    ctx.promote('st.kept');
    return 'noted';
  }

  @Tool({ name: 'st.wait', description: 'Waits a little. Tests only.', input: StepInput })
  async wait() {
    maxInFlight = Math.max(maxInFlight, ++inFlight);
    await new Promise((r) => setTimeout(r, 15));
    inFlight--;
    return 'waited';
  }

  @Hook('memory.read')
  look(_p: unknown, ctx: HookContext) {
    promotedSeen.push([ctx.get('st.kept'), ctx.get('st.scratch')]);
  }
}

async function run(script: ConstructorParameters<typeof ScriptedModel>[0], toolConcurrency?: number) {
  const app = Trellis.create();
  await app.install(StatefulPlugin);
  const session = app
    .agent({ name: 'st', model: new ScriptedModel(script), instructions: 'x', toolConcurrency })
    .session('s');
  const result = await session.send('go');
  return { session, result };
}

beforeEach(() => {
  inFlight = 0;
  maxInFlight = 0;
  promotedSeen = [];
});

describe("a tool's state writes", () => {
  it('are committed when the call succeeds, and dropped when it fails', async () => {
    const { session, result } = await run(
      [
        {
          toolCalls: [
            { name: 'st.add', args: { n: 2 } },
            { name: 'st.add', args: { n: -5 } },
          ],
        },
        'ok',
      ],
      1,
    );
    expect(result.toolCalls.map((c) => c.ok)).toEqual([true, false]);
    expect(session.values['st.total']).toBe(2);
  });

  it('at execution level vanish when the call ends, unless promoted to the turn', async () => {
    await run([{ toolCalls: [{ name: 'st.note', args: { n: 4 } }] }, 'ok']);
    expect(promotedSeen).toEqual([
      [undefined, undefined],
      [40, undefined],
    ]);
  });
});

describe('toolConcurrency', () => {
  it('defaults to 4 calls at once', async () => {
    const calls = Array.from({ length: 6 }, (_, n) => ({ name: 'st.wait', args: { n } }));
    const { result } = await run([{ toolCalls: calls }, 'ok']);
    expect(result.toolCalls).toHaveLength(6);
    expect(maxInFlight).toBe(4);
  });

  it('never exceeds the configured limit', async () => {
    const calls = Array.from({ length: 5 }, (_, n) => ({ name: 'st.wait', args: { n } }));
    await run([{ toolCalls: calls }, 'ok'], 2);
    expect(maxInFlight).toBe(2);
  });
});

describe('Requires on a hook', () => {
  it('a hook that requires a missing key fails the turn naming the key', async () => {
    @Plugin({ name: 'needy', version: '1.0.0' })
    class Needy {
      @Hook('task.start') @Requires('app.tenant') start() {}
    }
    const app = Trellis.create();
    await app.install(Needy);
    const result = await app
      .agent({ name: 'n', model: new ScriptedModel(['x']), instructions: 'x' })
      .session('s')
      .send('go');
    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'MissingContext', message: expect.stringContaining("'app.tenant'") });
  });
});
