import 'reflect-metadata';
import { Trellis, ScriptedModel, MemoryStore } from '../../../index.js';

describe('turns of one session never interleave', () => {
  it('a second send() waits for the first; the transcript is user1, assistant1, user2, assistant2', async () => {
    const store = new MemoryStore();
    const app = Trellis.create({ store });
    const log: string[] = [];
    const model = new ScriptedModel(async (request, index) => {
      const last = request.messages.at(-1)!.content;
      log.push(`start ${last}`);
      await new Promise((r) => setTimeout(r, index === 0 ? 40 : 1));
      log.push(`end ${last}`);
      return `answer to ${last}`;
    });
    const session = app.agent({ name: 'q', model, instructions: 'x' }).session('s');

    const [first, second] = await Promise.all([session.send('one'), session.send('two')]);

    expect(first.reply).toBe('answer to one');
    expect(second.reply).toBe('answer to two');
    expect(log).toEqual(['start one', 'end one', 'start two', 'end two']);
    const expected = ['one', 'answer to one', 'two', 'answer to two'];
    expect(session.transcript.map((m) => m.content)).toEqual(expected);
    // The second turn saw the first one's exchange.
    expect(model.calls[1]!.messages.map((m) => m.content)).toEqual(['x', ...expected.slice(0, 3)]);
    expect((await store.load('s'))!.transcript.map((m) => m.content)).toEqual(expected);
  });

  it('a failed turn does not block the queue', async () => {
    const app = Trellis.create();
    const model = new ScriptedModel([new Error('boom'), 'fine']);
    const session = app.agent({ name: 'q', model, instructions: 'x' }).session('s');

    const [first, second] = await Promise.all([session.send('one'), session.send('two')]);

    expect(first.status).toBe('failed');
    expect(second).toMatchObject({ status: 'completed', reply: 'fine' });
    expect(session.transcript.map((m) => m.content)).toEqual(['two', 'fine']);
  });

  it('different sessions run concurrently', async () => {
    const app = Trellis.create();
    let inFlight = 0;
    let maxInFlight = 0;
    const model = new ScriptedModel(async () => {
      maxInFlight = Math.max(maxInFlight, ++inFlight);
      await new Promise((r) => setTimeout(r, 20));
      inFlight--;
      return 'ok';
    });
    const agent = app.agent({ name: 'q', model, instructions: 'x' });
    await Promise.all([agent.session('a').send('1'), agent.session('b').send('2')]);
    expect(maxInFlight).toBe(2);
  });
});
