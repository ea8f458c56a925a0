import { TrellisError, type Usage } from 'trellis/plugin';
import { BillingAccounts } from './billing-accounts.js';
import type { BillingConfig } from './billing.config.js';

/**
 * The billing plugin's prices as a budget price (`Trellis.create({ budgets: { price } })`):
 * the credits a model call costs on `plan` (default the config's default plan), cached and
 * cache-write input tokens at their own prices, exactly as the plugin charges users. Give it the
 * config the plugin is installed with, so that `cost` budgets and users' bills agree.
 *
 * @example
 * const billing = { plans: [{ name: 'pro', credits: 1000, pricePer1kTokens: 0.5 }], defaultPlan: 'pro' };
 * Trellis.create({ budgets: { price: billingPrice(billing), limits: [{ owner: 'team-search', cost: { max: 200, windowMs: 3_600_000 } }] } });
 * await app.install(BillingPlugin, { config: billing });
 */
export function billingPrice(
  config: Pick<BillingConfig, 'plans'> & Partial<BillingConfig>,
  plan?: string,
): (usage: Usage) => number {
  const plans = config?.plans;
  if (!Array.isArray(plans) || plans.length === 0) {
    throw new TrellisError('InvalidConfig', 'billingPrice() needs the billing config, with at least one plan', {
      hint: "billingPrice({ plans: [{ name: 'pro', credits: 1000, pricePer1kTokens: 0.5 }] })",
    });
  }
  if (plan !== undefined && !plans.some((p) => p?.name === plan)) {
    throw new TrellisError(
      'InvalidConfig',
      `billingPrice(): '${plan}' is not one of the plans (${plans.map((p) => p?.name).join(', ')})`,
      { hint: 'Name a plan of the config, or leave the plan out for its default plan' },
    );
  }
  const accounts = new BillingAccounts({ pricePer1kTokens: 1, users: [], ...config });
  const priced = accounts.planOf(undefined, plan);
  return (usage) => accounts.cost(usage, priced);
}
