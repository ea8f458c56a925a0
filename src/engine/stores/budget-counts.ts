/**
 * An optional session-store capability: budget counts kept in the store, so workers sharing
 * one store share their counts without Redis (`SqliteStore` has it). `Trellis.create({ budgets })`
 * counts through it when no `counter` is given.
 */
export interface BudgetCounts {
  /**
   * Adds `amount` to the count of `key` in the window starting at `windowStart` (0 only reads)
   * and returns the count, in one atomic step; the row may be dropped once `expiresAt` (ms) has
   * passed, and rows past theirs may be dropped now (`now`).
   */
  addBudgetCount(key: string, windowStart: number, amount: number, expiresAt: number, now: number): Promise<number>;
}

export function canCountBudgets<T extends object>(store: T): store is T & BudgetCounts {
  return typeof (store as Partial<BudgetCounts>).addBudgetCount === 'function';
}
