import { toRegExp } from './eval-case.js';
import { shown, verdict, type Scorer } from './scorer.js';

/** The turn ended with the expected status (`completed` unless the case says otherwise). Always applies. */
export const statusScorer: Scorer = {
  name: 'status',
  applies: () => true,
  score: ({ case: c, result }) => {
    const want = c.expected?.status ?? 'completed';
    return verdict(
      'status',
      result.status === want,
      result.status === want
        ? want
        : `expected ${want}, got ${result.status}${result.error ? ` (${result.error.code}: ${result.error.message})` : ''}`,
    );
  },
};

/** The reply equals `expected.output`, surrounding whitespace ignored. */
export const exactScorer: Scorer = {
  name: 'exact',
  applies: (c) => c.expected?.output !== undefined,
  score: ({ case: c, reply }) => {
    const want = c.expected!.output!.trim();
    return verdict(
      'exact',
      reply.trim() === want,
      reply.trim() === want ? 'equal' : `expected ${shown(want)}, got ${shown(reply.trim())}`,
    );
  },
};

/** The reply contains every text of `expected.contains` (case-insensitive); the score is the share found. */
export const containsScorer: Scorer = {
  name: 'contains',
  applies: (c) => c.expected?.contains !== undefined,
  score: ({ case: c, reply }) => {
    const wanted = ([] as string[]).concat(c.expected!.contains as string | string[]);
    const text = reply.toLowerCase();
    const missing = wanted.filter((w) => !text.includes(w.toLowerCase()));
    const score = wanted.length === 0 ? 1 : (wanted.length - missing.length) / wanted.length;
    return {
      scorer: 'contains',
      pass: missing.length === 0,
      score,
      detail:
        missing.length === 0
          ? `all ${wanted.length} found`
          : `missing ${missing.map((m) => shown(m)).join(', ')} in ${shown(reply)}`,
    };
  },
};

/** The reply matches `expected.regex`. */
export const regexScorer: Scorer = {
  name: 'regex',
  applies: (c) => c.expected?.regex !== undefined,
  score: ({ case: c, reply }) => {
    const pattern = toRegExp(c.expected!.regex!);
    const pass = pattern.test(reply);
    return verdict('regex', pass, pass ? `matches ${pattern}` : `${shown(reply)} does not match ${pattern}`);
  },
};
