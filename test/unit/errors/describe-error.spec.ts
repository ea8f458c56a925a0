import 'reflect-metadata';
import { describeError } from '../../../src/errors/describe-error.js';
import { Trellis, Plugin, Hook } from 'trellis';
import { ScriptedModel } from 'trellis/testing';

describe('describeError: anything thrown becomes text, without throwing', () => {
  it.each([
    ['an Error', new Error('boom'), 'boom'],
    ['a string', 'plain', 'plain'],
    [
      'a null-prototype object with a message',
      Object.assign(Object.create(null), { message: 'from the loader' }),
      'from the loader',
    ],
  ])('%s', (_name, value, expected) => {
    expect(describeError(value)).toBe(expected);
  });

  it('survives a message getter and toString that throw', () => {
    const hostile = {
      get message(): string {
        throw new Error('no');
      },
      toString(): string {
        throw new Error('no');
      },
    };
    expect(typeof describeError(hostile)).toBe('string');
    expect(typeof describeError(Object.create(null))).toBe('string');
    expect(describeError(Symbol('s'))).toContain('Symbol');
  });

  it('keeps a turn reporting, not crashing, when a hook throws a null-prototype object', async () => {
    @Plugin({ name: 'odd', version: '1.0.0' })
    class Odd {
      @Hook('planning.started')
      plan(): never {
        throw Object.assign(Object.create(null), { message: 'odd failure' });
      }
    }
    const app = Trellis.create();
    await app.install(Odd);
    const result = await app
      .agent({ name: 'a', model: new ScriptedModel(['x']), instructions: 'i' })
      .session('s')
      .send('hi');
    expect(result.status).toBe('failed');
    expect(result.error?.message).toContain('odd failure');
    expect(result.error?.message).toContain("odd.plan at 'planning.started'");
  });
});
