import type { Usage } from 'trellis/plugin';
import { addUsage, type TokenTotals } from './token-usage.js';

/**
 * Where per-user token totals are kept. Bind your own (a database, Redis) under
 * {@link TOKEN_USAGE_STORE} to share totals between processes; the default keeps them
 * in memory.
 */
export interface TokenUsageStore {
  add(userId: string, model: string, usage: Usage): void | Promise<void>;
  get(userId: string): TokenTotals | undefined | Promise<TokenTotals | undefined>;
  /** Forgets a user's totals (`app.erase({ userId })`). A store without it makes a user's erasure fail rather than keep their totals. */
  delete?(userId: string): void | Promise<void>;
}

/** DI token of the {@link TokenUsageStore} the token accounting plugin uses. */
export const TOKEN_USAGE_STORE = Symbol.for('trellis.tokens.usage_store');

/** The default {@link TokenUsageStore}: a map in this process, lost on restart. */
export class InMemoryTokenUsageStore implements TokenUsageStore {
  private readonly totals = new Map<string, TokenTotals>();

  add(userId: string, model: string, usage: Usage): void {
    this.totals.set(userId, addUsage(this.totals.get(userId), model, usage));
  }

  get(userId: string): TokenTotals | undefined {
    return this.totals.get(userId);
  }

  delete(userId: string): void {
    this.totals.delete(userId);
  }
}
