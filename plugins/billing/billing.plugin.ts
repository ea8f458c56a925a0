import {
  inject,
  Hook,
  Plugin,
  Requires,
  StateKey,
  Transform,
  type InferenceRequest,
  type HookContext,
  TrellisError,
  type ModelResponse,
  PLUGIN_CONFIG,
} from 'trellis/plugin';
import { BillingAccounts, round, type CreditBalances } from './billing-accounts.js';
import { BillingConfig } from './billing.config.js';

/** The session's balances by user id: persisted with the session. */
export const CREDITS_KEY = 'billing.credits';
const USER_KEY = 'app.user_id';
const PLAN_KEY = 'app.plan';

/**
 * Credits per user, kept at session level (`billing.credits`, persistent, by user id).
 * The host passes the user as `app.user_id` (required) and may pass `app.plan`.
 *
 * - transform: sets `request.inference.model` to the model of the user's plan.
 * - `llm.before` (priority 10): a user at zero credits or below fails the turn with an
 *   `InsufficientCredits` error before the model is called.
 * - `llm.after` (priority 10): charges `totalTokens / 1000 × pricePer1kTokens`. The last
 *   call may take a balance below zero; no call is made after that.
 *
 * @example
 * await app.install(BillingPlugin, { config: { plans: [{ name: 'free', credits: 10, model: 'small' }] } });
 * agent.session('s1', { context: { 'app.user_id': 'u1', 'app.plan': 'free' } });
 */
@Plugin({
  name: 'billing',
  version: '1.0.0',
  description: 'Per-user credits: refuses model calls at zero, charges by token usage, picks the model by plan',
  priority: 10,
  config: BillingConfig,
})
@StateKey(CREDITS_KEY, { scope: 'session', merge: 'commutative', persistent: true, default: {} })
@Requires(USER_KEY, { key: PLAN_KEY, optional: true })
export class BillingPlugin {
  private readonly accounts: BillingAccounts;

  constructor(@inject(PLUGIN_CONFIG) config: BillingConfig) {
    this.accounts = new BillingAccounts(config);
  }

  @Transform()
  pickModel(request: InferenceRequest, ctx: HookContext): InferenceRequest {
    // Transforms get no resolved deps: read through ctx.get, which the class @Requires allows.
    const plan = this.accounts.planOf(ctx.get<string>(USER_KEY), ctx.get(PLAN_KEY));
    if (!plan.model || request.inference.model === plan.model) return request;
    return { ...request, inference: { ...request.inference, model: plan.model } };
  }

  @Hook('llm.before')
  refuseAtZero(_request: InferenceRequest, ctx: HookContext): void {
    const user = String(ctx.deps[USER_KEY]);
    const plan = this.accounts.planOf(user, ctx.deps[PLAN_KEY]);
    const balance = this.accounts.balance(ctx.get<CreditBalances>(CREDITS_KEY), user, plan);
    if (balance > 0) return;
    throw new TrellisError(
      'InsufficientCredits',
      `User '${user}' has no credits left (balance ${balance} on plan '${plan.name}')`,
      {
        hint: "Top up the user's credits or move them to a plan with more",
        details: { user, plan: plan.name, balance },
      },
    );
  }

  @Hook('llm.after')
  charge(response: ModelResponse, ctx: HookContext): void {
    const user = String(ctx.deps[USER_KEY]);
    const plan = this.accounts.planOf(user, ctx.deps[PLAN_KEY]);
    const cost = this.accounts.cost(response.usage, plan);
    if (cost === 0) return;
    ctx.update<CreditBalances>(CREDITS_KEY, (balances) => ({
      ...balances,
      [user]: round(this.accounts.balance(balances, user, plan) - cost),
    }));
  }
}
