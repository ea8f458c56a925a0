import type { ExpectedToolCall } from './eval-case.js';
import { partialMatch } from './json-scorer.js';
import { shown, type ObservedToolCall, type Scorer } from './scorer.js';

function matches(want: ExpectedToolCall, got: ObservedToolCall): boolean {
  return want.name === got.name && (want.args === undefined || partialMatch(want.args, got.args));
}

/**
 * The tool-call trajectory: which tools, in what order, with which arguments
 * (`expected.toolCalls`, `expected.toolOrder`). The score is the share of expected calls matched.
 */
export const trajectoryScorer: Scorer = {
  name: 'trajectory',
  applies: (c) => c.expected?.toolCalls !== undefined,
  score: ({ case: c, toolCalls }) => {
    const wanted = c.expected!.toolCalls!;
    const order = c.expected!.toolOrder ?? 'in-order';
    let matched = 0;
    if (order === 'exact') {
      matched = wanted.filter((w, i) => toolCalls[i] !== undefined && matches(w, toolCalls[i])).length;
    } else if (order === 'in-order') {
      let at = 0;
      for (const w of wanted) {
        const found = toolCalls.findIndex((g, i) => i >= at && matches(w, g));
        if (found < 0) continue;
        matched++;
        at = found + 1;
      }
    } else {
      const used = new Set<number>();
      for (const w of wanted) {
        const found = toolCalls.findIndex((g, i) => !used.has(i) && matches(w, g));
        if (found < 0) continue;
        used.add(found);
        matched++;
      }
    }
    const extra = order === 'exact' && toolCalls.length !== wanted.length;
    const pass = matched === wanted.length && !extra;
    const score = wanted.length === 0 ? (toolCalls.length === 0 || order !== 'exact' ? 1 : 0) : matched / wanted.length;
    const got = toolCalls.map((g) => `${g.name}(${shown(g.args, 60)})`).join(' → ') || 'no calls';
    return {
      scorer: 'trajectory',
      pass,
      score: extra ? Math.min(score, 0.99) : score,
      detail: pass
        ? `${order}: ${got}`
        : `expected ${order} ${wanted.map((w) => w.name + (w.args ? `(${shown(w.args, 60)})` : '')).join(' → ') || 'no calls'}, got ${got}`,
    };
  },
};
