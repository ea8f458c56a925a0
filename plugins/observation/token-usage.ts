import type { Usage } from 'trellis/plugin';

/** Token totals: overall, by model, and the number of model calls they came from. */
export interface TokenTotals {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly totalTokens: number;
  readonly calls: number;
  readonly byModel: Readonly<Record<string, Usage>>;
}

/** Totals before anything was used. */
export const EMPTY_TOTALS: TokenTotals = Object.freeze({ inputTokens: 0, outputTokens: 0, totalTokens: 0, calls: 0, byModel: Object.freeze({}) });

/** Totals plus one model call's usage; a new object, the old one untouched. */
export function addUsage(totals: TokenTotals | undefined, model: string, usage: Usage, byModel = true): TokenTotals {
  const base = totals ?? EMPTY_TOTALS;
  const previous = base.byModel[model];
  return {
    inputTokens: base.inputTokens + usage.inputTokens,
    outputTokens: base.outputTokens + usage.outputTokens,
    totalTokens: base.totalTokens + usage.totalTokens,
    calls: base.calls + 1,
    byModel: byModel
      ? {
          ...base.byModel,
          [model]: {
            inputTokens: (previous?.inputTokens ?? 0) + usage.inputTokens,
            outputTokens: (previous?.outputTokens ?? 0) + usage.outputTokens,
            totalTokens: (previous?.totalTokens ?? 0) + usage.totalTokens,
          },
        }
      : base.byModel,
  };
}
