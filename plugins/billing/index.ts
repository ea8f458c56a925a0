/**
 * `trellis/plugins/billing`: the `billing` plugin (per-user credits, charged by token usage,
 * model picked by plan) with its config classes and prices. See docs/plugins/billing.md.
 */
export { BillingPlugin, CREDITS_KEY } from './billing.plugin.js';
export { BillingConfig, BillingPlan, UserAccount } from './billing.config.js';
export { BillingAccounts, type CreditBalances } from './billing-accounts.js';
export { billingPrice } from './billing-price.js';
