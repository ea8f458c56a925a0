import 'reflect-metadata';
import { MemoryStore, ScriptedModel, Trellis, TrellisError } from '../../../index.js';
import { kernelOf } from '../../../src/app/kernel-access.js';

describe('a long-running host does not keep every session forever', () => {
  it('drops the least recently used idle sessions past maxOpen; they reload from the store', async () => {
    const app = Trellis.create({ store: new MemoryStore(), sessions: { maxOpen: 3 } });
    const agent = app.agent({ name: 'a', model: new ScriptedModel(() => 'ok'), instructions: 'x' });
    const first = agent.session('s0');
    await first.send('hello');
    for (let i = 1; i <= 5; i++) await agent.session(`s${i}`).send('hi');

    const again = agent.session('s0');
    expect(again).not.toBe(first);
    expect(again.transcript).toEqual([]);
    await again.send('back');
    expect(again.transcript.map((m) => m.content)).toEqual(['hello', 'ok', 'back', 'ok']);
    expect(agent.session('s5')).toBe(agent.session('s5'));
  });

  it('never drops a session while a turn runs on it', async () => {
    const app = Trellis.create({ store: new MemoryStore(), sessions: { maxOpen: 1 } });
    let finish!: (text: string) => void;
    const model = new ScriptedModel(() => new Promise<string>((resolve) => (finish = resolve)));
    const agent = app.agent({ name: 'a', model, instructions: 'x' });
    const busy = agent.session('busy');
    const running = busy.send('slow');
    await new Promise((resolve) => setTimeout(resolve, 10));
    agent.session('other');
    expect(agent.session('busy')).toBe(busy);
    finish('done');
    expect((await running).reply).toBe('done');
  });

  it('keeps memory flat over 10,000 turns in as many sessions', async () => {
    const app = Trellis.create({ store: new MemoryStore(), sessions: { maxOpen: 50 } });
    const agent = app.agent({ name: 'a', model: new ScriptedModel(() => 'ok'), instructions: 'x' });
    for (let i = 0; i < 10_000; i++) await agent.session(`s${i}`).send('hi');
    // The app's live session states follow the agent's open sessions, not the 10,000 opened.
    expect(kernelOf(app).liveSessions()).toBeLessThanOrEqual(50);
  }, 120_000);

  it('refuses nonsense limits', () => {
    expect(() => Trellis.create({ sessions: { maxOpen: 0 } })).toThrow(TrellisError);
    expect(() => Trellis.create({ sessions: { idleMs: -1 } })).toThrow(/sessions must be/);
  });
});
