import 'reflect-metadata';
import { Trellis, ScriptedModel, TrellisError, type TrellisEvent } from '../../../index.js';

const retryable = () => new TrellisError('ModelFailed', 'primary is overloaded (503)', { retryable: true });
const fatal = () => new TrellisError('ModelFailed', 'primary says bad request (400)', { retryable: false });

describe('model: [primary, fallback]', () => {
  it('moves on to the next model after a retryable failure; usage is counted for the model that answered', async () => {
    const app = Trellis.create();
    const primary = new ScriptedModel([retryable()], { name: 'primary' });
    const backup = new ScriptedModel([{ text: 'from backup', usage: { inputTokens: 7, outputTokens: 3 } }], {
      name: 'backup',
    });
    const events: TrellisEvent[] = [];
    const sub = app.events$.subscribe((e) => events.push(e));

    const result = await app
      .agent({ name: 'f', model: [primary, backup], instructions: 'x' })
      .session('s')
      .send('hi');
    sub.unsubscribe();

    expect(result).toMatchObject({ status: 'completed', reply: 'from backup', rounds: 1 });
    expect(primary.calls).toHaveLength(1);
    expect(backup.calls).toHaveLength(1);
    expect(Object.keys(result.usage.byModel)).toEqual(['backup']);
    expect(result.usage).toMatchObject({ inputTokens: 7, outputTokens: 3, totalTokens: 10 });
    expect(events.find((e) => e.type === 'model.fallback')).toMatchObject({ from: 'primary', to: 'backup' });
  });

  it('counts each turn by the model that answered it, summed over its rounds', async () => {
    const app = Trellis.create();
    const primary = new ScriptedModel(
      [
        retryable(),
        { toolCalls: [{ name: 'none.here', args: {} }], usage: { inputTokens: 1, outputTokens: 1 } },
        { text: 'primary again', usage: { inputTokens: 5, outputTokens: 5 } },
      ],
      { name: 'primary' },
    );
    const backup = new ScriptedModel([{ text: 'from backup', usage: { inputTokens: 2, outputTokens: 2 } }], {
      name: 'backup',
    });
    const session = app.agent({ name: 'f', model: [primary, backup], instructions: 'x' }).session('s');

    const first = await session.send('one');
    const second = await session.send('two');

    expect(first.usage.byModel).toEqual({ backup: { inputTokens: 2, outputTokens: 2, totalTokens: 4 } });
    expect(second.rounds).toBe(2);
    expect(second.usage.byModel).toEqual({ primary: { inputTokens: 6, outputTokens: 6, totalTokens: 12 } });
  });

  it('a non-retryable error does not fall back: the turn fails with it', async () => {
    const app = Trellis.create();
    const primary = new ScriptedModel([fatal()], { name: 'primary' });
    const backup = new ScriptedModel(['never'], { name: 'backup' });
    const session = app.agent({ name: 'f', model: [primary, backup], instructions: 'x' }).session('s');

    const result = await session.send('hi');

    expect(result.status).toBe('failed');
    expect(result.error).toMatchObject({ code: 'ModelFailed', message: expect.stringContaining('bad request') });
    expect(backup.calls).toHaveLength(0);
    expect(session.transcript).toEqual([]);
  });

  it('when every model fails, the turn fails naming each', async () => {
    const app = Trellis.create();
    const primary = new ScriptedModel([retryable()], { name: 'primary' });
    const backup = new ScriptedModel([retryable()], { name: 'backup' });

    const result = await app
      .agent({ name: 'f', model: [primary, backup], instructions: 'x' })
      .session('s')
      .send('hi');

    expect(result.status).toBe('failed');
    expect(result.error?.message).toMatch(/primary.*backup/s);
  });
});
