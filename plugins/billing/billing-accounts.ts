import type { Usage } from 'trellis/plugin';
import type { BillingConfig, BillingPlan, UserAccount } from './billing.config.js';

/** Balances by user id, as kept in the `billing.credits` state key. */
export type CreditBalances = Readonly<Record<string, number>>;

/**
 * The configured plans and users: which plan a user is on, what they start with, what a
 * model call costs them.
 */
export class BillingAccounts {
  private readonly plans: ReadonlyMap<string, BillingPlan>;
  private readonly users: ReadonlyMap<string, UserAccount>;
  private readonly defaultPlan: BillingPlan;

  constructor(private readonly config: BillingConfig) {
    this.plans = new Map(config.plans.map((p) => [p.name, p]));
    this.users = new Map(config.users.map((u) => [u.user, u]));
    this.defaultPlan = this.plans.get(config.defaultPlan ?? '') ?? config.plans[0]!;
  }

  /** The plan from the context (`app.plan`) if it names one, else the user's configured plan, else the default. */
  planOf(user: string | undefined, contextPlan: unknown): BillingPlan {
    const named = typeof contextPlan === 'string' ? this.plans.get(contextPlan) : undefined;
    return named ?? this.plans.get(this.users.get(user ?? '')?.plan ?? '') ?? this.defaultPlan;
  }

  /** The user's balance: what this session has left, or what they start with. */
  balance(balances: CreditBalances | undefined, user: string, plan: BillingPlan): number {
    return balances?.[user] ?? this.users.get(user)?.credits ?? plan.credits;
  }

  /**
   * What a model call with this usage costs on this plan: cached and cache-write input
   * tokens at their own prices, every other token at `pricePer1kTokens`.
   */
  cost(usage: Usage, plan: BillingPlan): number {
    const price = plan.pricePer1kTokens ?? this.config.pricePer1kTokens;
    const cachedPrice = plan.pricePer1kCachedInputTokens ?? this.config.pricePer1kCachedInputTokens ?? price;
    const writePrice = plan.pricePer1kCacheWriteTokens ?? this.config.pricePer1kCacheWriteTokens ?? price;
    const cached = usage.cachedInputTokens ?? 0;
    const written = usage.cacheWriteInputTokens ?? 0;
    const plain = usage.totalTokens - cached - written;
    return round((plain * price + cached * cachedPrice + written * writePrice) / 1000);
  }
}

/** Credits are decimal amounts; keep float noise out of the balances. */
export function round(amount: number): number {
  return Math.round(amount * 1e6) / 1e6;
}
