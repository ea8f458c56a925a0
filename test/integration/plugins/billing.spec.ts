import 'reflect-metadata';
import { IsOptional, IsString } from 'class-validator';
import {
  MemoryStore,
  Plugin,
  ScriptedModel,
  Tool,
  Trellis,
  TrellisError,
  type ScriptedReply,
  type ToolContext,
} from '../../../index.js';
import { BillingPlugin, CREDITS_KEY } from '../../../plugins/billing/index.js';

class NoInput {
  @IsOptional() @IsString() q?: string;
}

@Plugin({ name: 'kb', version: '1.0.0' })
class KbPlugin {
  @Tool({ name: 'kb.lookup', description: 'Looks an answer up.', input: NoInput })
  lookup(_i: NoInput, _ctx: ToolContext) {
    return 'found';
  }
}

const config = {
  plans: [
    { name: 'free', credits: 2, model: 'small-model' },
    { name: 'pro', credits: 100, model: 'large-model', pricePer1kTokens: 0.5 },
  ],
  defaultPlan: 'free',
  pricePer1kTokens: 2,
  users: [
    { user: 'broke', credits: 0 },
    { user: 'vip', plan: 'pro', credits: 7 },
  ],
};

/** A reply that used exactly `tokens` tokens. */
const costing = (tokens: number, text = 'ok'): ScriptedReply => ({
  text,
  usage: { inputTokens: tokens, outputTokens: 0, totalTokens: tokens },
});

async function setup(script: ConstructorParameters<typeof ScriptedModel>[0], store?: MemoryStore) {
  const app = Trellis.create({ store });
  await app.install(KbPlugin);
  await app.install(BillingPlugin, { config });
  const model = new ScriptedModel(script);
  const agent = app.agent({ name: 'billed', model, instructions: 'x' });
  return { app, model, agent };
}

const credits = (session: { values: Readonly<Record<string, unknown>> }) => session.values[CREDITS_KEY];

describe('billing plugin', () => {
  describe('the model is picked by plan', () => {
    it.each([
      ['app.plan from the context', { 'app.user_id': 'u1', 'app.plan': 'pro' }, 'large-model'],
      ['the default plan', { 'app.user_id': 'u1' }, 'small-model'],
      ["the user's configured plan", { 'app.user_id': 'vip' }, 'large-model'],
      ['the default for an unknown app.plan', { 'app.user_id': 'u1', 'app.plan': 'gold' }, 'small-model'],
    ])('%s', async (_what, context, expected) => {
      const { model, agent } = await setup([costing(0)]);
      await agent.session('s', { context }).send('hi');
      expect(model.calls[0]!.inference?.model).toBe(expected);
    });
  });

  describe('charging by usage', () => {
    it('charges each model call of a turn at the plan price, per user', async () => {
      const { agent } = await setup([
        {
          toolCalls: [{ name: 'kb.lookup', args: {} }],
          usage: { inputTokens: 200, outputTokens: 50, totalTokens: 250 },
        },
        costing(250),
        costing(1000),
      ]);
      const session = agent.session('s', { context: { 'app.user_id': 'u1' } });
      expect((await session.send('look it up')).status).toBe('completed');
      expect(credits(session)).toEqual({ u1: 1 }); // 2 − 2 × 500/1000
      const pro = agent.session('p', { context: { 'app.user_id': 'u2', 'app.plan': 'pro' } });
      await pro.send('hi');
      expect(credits(pro)).toEqual({ u2: 99.5 }); // 100 − 0.5 × 1000/1000
    });

    it('keeps the balance with the session in the store', async () => {
      const store = new MemoryStore();
      const first = await setup([costing(500)], store);
      await first.agent.session('s', { context: { 'app.user_id': 'u1' } }).send('hi');
      const second = await setup([costing(0)], store);
      const again = second.agent.session('s', { context: { 'app.user_id': 'u1' } });
      await again.send('hi again');
      expect(credits(again)).toEqual({ u1: 1 });
    });
  });

  describe('llm.before refuses at zero', () => {
    it('fails the turn with InsufficientCredits once the credits are spent, without calling the model', async () => {
      const { model, agent } = await setup([costing(1000), costing(0)]);
      const session = agent.session('s', { context: { 'app.user_id': 'u1' } });
      expect((await session.send('first')).status).toBe('completed');
      expect(credits(session)).toEqual({ u1: 0 });
      const refused = await session.send('second');
      expect(refused.status).toBe('failed');
      expect(refused.error?.code).toBe('InsufficientCredits');
      expect(refused.error?.message).toContain("User 'u1' has no credits left (balance 0 on plan 'free')");
      expect(model.calls).toHaveLength(1);
    });

    it('refuses a user configured with no credits on the first call', async () => {
      const { model, agent } = await setup([costing(0)]);
      const result = await agent.session('s', { context: { 'app.user_id': 'broke' } }).send('hi');
      expect(result.error?.code).toBe('InsufficientCredits');
      expect(model.calls).toHaveLength(0);
    });

    // Known kernel gap: a failed turn restores the session state saved before it, so the
    // charges of its earlier rounds are undone and the user got those model calls free.
    // Flip to it() once the kernel keeps billing.credits across a failed turn.
    it('keeps the charges of earlier rounds when a later round is refused', async () => {
      const { model, agent } = await setup([
        {
          toolCalls: [{ name: 'kb.lookup', args: {} }],
          usage: { inputTokens: 1000, outputTokens: 0, totalTokens: 1000 },
        },
        'never',
      ]);
      const session = agent.session('s', { context: { 'app.user_id': 'u1' } });
      const result = await session.send('look it up');
      expect(result.error?.code).toBe('InsufficientCredits');
      expect(model.calls).toHaveLength(1);
      expect(credits(session)).toEqual({ u1: 0 });
    });

    it('requires app.user_id', async () => {
      const { model, agent } = await setup([costing(0)]);
      const result = await agent.session('s').send('hi');
      expect(result).toMatchObject({ status: 'failed', error: { code: 'MissingContext' } });
      expect(result.error?.message).toContain('app.user_id');
      expect(model.calls).toHaveLength(0);
    });
  });

  it('refuses a bad config at install, naming every bad field', async () => {
    const app = Trellis.create();
    const bad = {
      plans: [
        { name: 'free', credits: -1 },
        { name: 'free', credits: 'lots', model: '' },
      ],
      defaultPlan: 'gold',
      pricePer1kTokens: 'cheap',
      users: [{ user: '', plan: 'platinum' }],
    };
    const error = await app.install(BillingPlugin, { config: bad }).catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
    const paths = ((error as TrellisError).details['errors'] as { path: string }[]).map((e) => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'plans',
        'plans[0].credits',
        'plans[1].credits',
        'plans[1].model',
        'defaultPlan',
        'pricePer1kTokens',
        'users',
        'users[0].user',
      ]),
    );
    expect((error as TrellisError).message).toContain("users[0].plan 'platinum' is not one of the plans (free)");
    const missing = await app.install(BillingPlugin).catch((e: unknown) => e);
    expect((missing as TrellisError).message).toContain('plans');
  });
});
