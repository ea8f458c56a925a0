import 'reflect-metadata';
import { Trellis, ScriptedModel } from '../../../index.js';

describe('app.agent(spec)', () => {
  it('refuses an invalid spec, listing every problem', () => {
    const app = Trellis.create();
    let error: unknown;
    try {
      app.agent({ name: 'bad', model: [], instructions: 'x', maxRounds: 0, toolConcurrency: 1.5 });
    } catch (e) {
      error = e;
    }
    expect(error).toMatchObject({ code: 'InvalidOptions' });
    const message = (error as Error).message;
    expect(message).toContain('model');
    expect(message).toContain('maxRounds');
    expect(message).toContain('toolConcurrency');
  });

  it('applies the defaults: maxRounds 10, toolConcurrency 4', () => {
    const agent = Trellis.create().agent({ name: 'ok', model: new ScriptedModel([]), instructions: 'x' });
    expect(agent.limits).toMatchObject({ maxRounds: 10, toolConcurrency: 4 });
  });

  it('returns the open session for a known id, and makes an id when none is given', () => {
    const agent = Trellis.create().agent({ name: 'ok', model: new ScriptedModel([]), instructions: 'x' });
    expect(agent.session('a')).toBe(agent.session('a'));
    const fresh = agent.session();
    expect(fresh.id).toMatch(/^[0-9a-f-]{36}$/);
    expect(agent.session()).not.toBe(fresh);
  });

  it('send() refuses a message that is not text', async () => {
    const session = Trellis.create()
      .agent({ name: 'ok', model: new ScriptedModel(['x']), instructions: 'x' })
      .session('s');
    await expect(session.send(42 as never)).rejects.toMatchObject({ code: 'InvalidOptions' });
  });
});
