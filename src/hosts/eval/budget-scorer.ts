import type { Scorer } from './scorer.js';

/** Latency, token and round budgets (`budgets`): passes when the turn stayed within each limit given. */
export const budgetScorer: Scorer = {
  name: 'budget',
  applies: (c) => c.budgets !== undefined && Object.keys(c.budgets).length > 0,
  score: ({ case: c, result, latencyMs }) => {
    const { latencyMs: maxMs, tokens, rounds } = c.budgets!;
    const over: string[] = [];
    const within: string[] = [];
    const check = (what: string, used: number, limit: number | undefined, unit: string) => {
      if (limit === undefined) return;
      (used > limit ? over : within).push(`${what} ${Math.round(used)}${unit} of ${limit}${unit}`);
    };
    check('latency', latencyMs, maxMs, 'ms');
    check('tokens', result.usage.totalTokens, tokens, '');
    check('rounds', result.rounds, rounds, '');
    const total = over.length + within.length;
    return {
      scorer: 'budget',
      pass: over.length === 0,
      score: within.length / total,
      detail: over.length === 0 ? within.join(', ') : `over: ${over.join(', ')}`,
    };
  },
};
