import 'reflect-metadata';
import { Trellis, ScriptedModel, MemoryStore, TrellisError } from '../../../index.js';
import {
  InMemoryTokenUsageStore,
  TOKEN_USAGE_STORE,
  TokenAccountingPlugin,
  SESSION_TOKENS_KEY,
} from '../../../plugins/observation/index.js';

const reply = (text: string, inputTokens: number, outputTokens: number) => ({
  text,
  usage: { inputTokens, outputTokens, totalTokens: inputTokens + outputTokens },
});

describe('TokenAccountingPlugin', () => {
  it('totals usage per session (persisted) and per user, across turns and sessions', async () => {
    const store = new MemoryStore();
    const app = Trellis.create({ store });
    const tokens = (await app.install(TokenAccountingPlugin)).instance;
    const model = new ScriptedModel([reply('a', 10, 2), reply('b', 20, 3), reply('c', 5, 1), reply('d', 7, 7)], {
      name: 'm1',
    });
    const agent = app.agent({ name: 'a', model, instructions: 'x' });
    const s1 = agent.session('s1', { context: { 'app.user_id': 'u1' } });
    await s1.send('one');
    await s1.send('two');
    const s2 = agent.session('s2', { context: { 'app.user_id': 'u1' } });
    await s2.send('three');
    await agent.session('anon').send('four');

    expect(tokens.sessionUsage(s1)).toMatchObject({
      inputTokens: 30,
      outputTokens: 5,
      totalTokens: 35,
      calls: 2,
      byModel: { m1: { inputTokens: 30, outputTokens: 5, totalTokens: 35 } },
    });
    expect(tokens.sessionUsage(s2).totalTokens).toBe(6);
    expect(tokens.sessionUsage(agent.session('anon')).totalTokens).toBe(14);
    expect(await tokens.userUsage('u1')).toMatchObject({ inputTokens: 35, outputTokens: 6, calls: 3 });
    expect((await tokens.userUsage('nobody')).totalTokens).toBe(0);

    // The session key is persistent: a new app (another process) on the same store restores it.
    const stored = await store.load('s1');
    expect(stored!.state[SESSION_TOKENS_KEY]).toMatchObject({ totalTokens: 35 });
    const next = Trellis.create({ store });
    const tokens2 = (await next.install(TokenAccountingPlugin)).instance;
    const again = next
      .agent({ name: 'a', model: new ScriptedModel([reply('e', 1, 1)], { name: 'm2' }), instructions: 'x' })
      .session('s1');
    await again.send('five');
    expect(tokens2.sessionUsage(again)).toMatchObject({
      totalTokens: 37,
      calls: 3,
      byModel: { m1: { totalTokens: 35 }, m2: { totalTokens: 2 } },
    });
  });

  it("forgets a user's totals when the user (or their tenant) is erased, not when one of their sessions is; a store that cannot delete fails the erasure with nothing deleted", async () => {
    const store = new MemoryStore();
    const app = Trellis.create({ store });
    const tokens = (await app.install(TokenAccountingPlugin)).instance;
    const agent = app.agent({ name: 'a', model: new ScriptedModel((_req) => reply('ok', 3, 1)), instructions: 'x' });
    await agent.session('e1', { context: { 'app.user_id': 'u1', 'app.tenant': 't1' } }).send('one');
    await agent.session('e2', { context: { 'app.user_id': 'u1', 'app.tenant': 't1' } }).send('two');
    await agent.session('e3', { context: { 'app.user_id': 'u2', 'app.tenant': 't1' } }).send('three');
    await app.erase({ sessionId: 'e1' });
    expect((await tokens.userUsage('u1')).calls).toBe(2);
    await app.erase({ userId: 'u1' });
    expect((await tokens.userUsage('u1')).calls).toBe(0);
    expect((await tokens.userUsage('u2')).calls).toBe(1);
    await app.erase({ tenant: 't1' });
    expect((await tokens.userUsage('u2')).calls).toBe(0);

    const keeping = { add: () => undefined, get: () => undefined };
    const strict = Trellis.create({ store, providers: [{ provide: TOKEN_USAGE_STORE, useValue: keeping }] });
    await strict.install(TokenAccountingPlugin);
    await strict
      .agent({ name: 'a', model: new ScriptedModel([reply('ok', 1, 1)]), instructions: 'x' })
      .session('e4', { context: { 'app.user_id': 'u3' } })
      .send('four');
    await expect(strict.erase({ userId: 'u3' })).rejects.toMatchObject({
      code: 'InvalidConfig',
      message: expect.stringContaining('cannot delete a user'),
    });
    expect(await store.load('e4')).toBeDefined();
  });

  it('uses a host-bound usage store, and perUser: false keeps no user totals', async () => {
    const users = new InMemoryTokenUsageStore();
    const app = Trellis.create({ providers: [{ provide: TOKEN_USAGE_STORE, useValue: users }] });
    await app.install(TokenAccountingPlugin);
    await app
      .agent({ name: 'a', model: new ScriptedModel([reply('a', 4, 4)]), instructions: 'x' })
      .session('s', { context: { 'app.user_id': 'u9' } })
      .send('hi');
    expect(users.get('u9')).toMatchObject({ totalTokens: 8, calls: 1 });

    const off = new InMemoryTokenUsageStore();
    const app2 = Trellis.create({ providers: [{ provide: TOKEN_USAGE_STORE, useValue: off }] });
    const tokens = (await app2.install(TokenAccountingPlugin, { config: { perUser: false, byModel: false } })).instance;
    const session = app2
      .agent({ name: 'a', model: new ScriptedModel([reply('a', 4, 4)]), instructions: 'x' })
      .session('s', { context: { 'app.user_id': 'u9' } });
    await session.send('hi');
    expect(off.get('u9')).toBeUndefined();
    expect(tokens.sessionUsage(session)).toMatchObject({ totalTokens: 8, byModel: {} });
  });

  it('refuses bad config, naming every bad field', async () => {
    const error = await Trellis.create()
      .install(TokenAccountingPlugin, { config: { perUser: 'yes', byModel: 1 } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    expect((error as Error).message).toContain('perUser');
    expect((error as Error).message).toContain('byModel');
  });
});
