import 'reflect-metadata';
import { IsNumber } from 'class-validator';
import { MemoryStore, Plugin, ScriptedModel, Tool, Trellis, TrellisError, type ToolContext } from '../../../index.js';
import { LESSONS_KEY, ReflectionPlugin } from '../../../plugins/reflection/index.js';

class DivideInput {
  @IsNumber() a!: number;
  @IsNumber() b!: number;
}

@Plugin({ name: 'calc', version: '1.0.0' })
class CalcPlugin {
  @Tool({ name: 'calc.divide', description: 'Divides a by b.', input: DivideInput })
  divide(input: DivideInput, _ctx: ToolContext) {
    if (input.b === 0) throw new Error('division by zero');
    return input.a / input.b;
  }
}

const divide = (args: object) => ({ toolCalls: [{ name: 'calc.divide', args }] });

async function setup(script: ConstructorParameters<typeof ScriptedModel>[0], config?: object, store?: MemoryStore) {
  const app = Trellis.create({ store });
  await app.install(CalcPlugin);
  await app.install(ReflectionPlugin, { config });
  const model = new ScriptedModel(script);
  const session = app.agent({ name: 'calc', model, instructions: 'You divide.' }).session('s');
  return { model, session };
}

const system = (model: ScriptedModel, call: number) => model.calls[call]!.messages[0]!.content;

describe('reflection plugin', () => {
  it('writes a lesson on tool.error and adds it to the next turn\u2019s instructions', async () => {
    const { model, session } = await setup([divide({ a: 1, b: 0 }), 'cannot divide by zero', 'sure']);
    expect((await session.send('1/0?')).toolCalls[0]).toMatchObject({ ok: false, error: { code: 'ToolFailed' } });
    const lessons = session.values[LESSONS_KEY] as { tool: string; code: string; text: string }[];
    expect(lessons).toEqual([expect.objectContaining({ tool: 'calc.divide', code: 'ToolFailed', turn: 0 })]);
    expect(lessons[0]!.text).toContain('division by zero');
    // Not within the turn that failed: the lesson is for the next one.
    expect(system(model, 1)).toBe('You divide.');
    await session.send('hello');
    expect(system(model, 2)).toBe(
      `You divide.\n\nLessons from earlier tool errors in this conversation:\n- ${lessons[0]!.text}`,
    );
  });

  it('learns from invalid arguments with advice for that code', async () => {
    const { model, session } = await setup([divide({ a: 'one', b: 2 }), 'oops', 'ok']);
    await session.send('one/2?');
    await session.send('again');
    expect(system(model, 2)).toMatch(
      /calc\.divide failed with ToolInput \(".*a must be a number.*"\): send arguments that match its input schema\./,
    );
  });

  it('keeps only the newest maxLessons and no duplicates', async () => {
    const { model, session } = await setup(
      [
        divide({ a: 1, b: 0 }),
        divide({ a: 'x', b: 1 }),
        divide({ a: 1, b: 'y' }),
        divide({ a: 1, b: 'y' }),
        'gave up',
        'next',
      ],
      { maxLessons: 2 },
    );
    await session.send('try hard');
    await session.send('next');
    const prompt = system(model, 5);
    expect(prompt.match(/^- /gm)).toHaveLength(2);
    expect(prompt).not.toContain('division by zero');
    expect(prompt).toContain('a must be a number');
    expect(prompt).toContain('b must be a number');
  });

  it('keeps lessons with the session in the store', async () => {
    const store = new MemoryStore();
    const first = await setup([divide({ a: 1, b: 0 }), 'no'], undefined, store);
    await first.session.send('1/0');
    const second = await setup(['yes'], undefined, store);
    await second.session.send('hi');
    expect(system(second.model, 0)).toContain('division by zero');
  });

  it('refuses a bad config at install, naming every bad field', async () => {
    const app = Trellis.create();
    const error = await app
      .install(ReflectionPlugin, {
        config: { maxLessons: 0, maxMessageChars: 'long', heading: '', ignoreCodes: [1], other: 1 },
      })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    const paths = ((error as TrellisError).details['errors'] as { path: string }[]).map((e) => e.path);
    expect(paths).toEqual(expect.arrayContaining(['maxLessons', 'maxMessageChars', 'heading', 'ignoreCodes', 'other']));
  });
});
