import { addUsage as addModelUsage, type Usage } from 'trellis/plugin';

/**
 * Token totals: overall, by model, and the number of model calls they came from.
 * `cachedInputTokens` / `cacheWriteInputTokens` are parts of `inputTokens`, present once
 * a provider reported them.
 */
export interface TokenTotals extends Usage {
  readonly calls: number;
  readonly byModel: Readonly<Record<string, Usage>>;
}

/** Totals before anything was used. */
export const EMPTY_TOTALS: TokenTotals = Object.freeze({
  inputTokens: 0,
  outputTokens: 0,
  totalTokens: 0,
  calls: 0,
  byModel: Object.freeze({}),
});

/** Totals plus one model call's usage; a new object, the old one untouched. */
export function addUsage(totals: TokenTotals | undefined, model: string, usage: Usage, byModel = true): TokenTotals {
  const base = totals ?? EMPTY_TOTALS;
  return {
    ...addModelUsage(base, usage),
    calls: base.calls + 1,
    byModel: byModel ? { ...base.byModel, [model]: addModelUsage(base.byModel[model], usage) } : base.byModel,
  };
}
