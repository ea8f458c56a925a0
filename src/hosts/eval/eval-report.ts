import type { EvalCaseResult } from './eval-runner.js';

/** How one scorer did over the cases it applied to. */
export interface ScorerSummary {
  readonly cases: number;
  readonly passed: number;
  readonly meanScore: number;
}

/** The figures of a run. */
export interface EvalSummary {
  readonly cases: number;
  readonly passed: number;
  readonly failed: number;
  /** Passed over cases, 0 to 1 (1 for an empty run). */
  readonly passRate: number;
  /** The mean of the cases' scores, 0 to 1. */
  readonly meanScore: number;
  readonly tokens: number;
  /** Per scorer, by name. */
  readonly scorers: Readonly<Record<string, ScorerSummary>>;
}

/** What `trellis eval --json` writes: the run, its figures and every case's scores. */
export interface EvalReport {
  readonly version: 1;
  /** The dataset's file name (or a label). */
  readonly dataset: string;
  /** The model the agent ran with, when known. */
  readonly model?: string;
  readonly startedAt: string;
  readonly durationMs: number;
  readonly summary: EvalSummary;
  readonly cases: readonly EvalCaseResult[];
}

/** The figures of a run's results. */
export function summariseEval(results: readonly EvalCaseResult[]): EvalSummary {
  const passed = results.filter((r) => r.pass).length;
  const scorers: Record<string, { cases: number; passed: number; total: number }> = {};
  for (const result of results) {
    for (const s of result.scores) {
      const entry = (scorers[s.scorer] ??= { cases: 0, passed: 0, total: 0 });
      entry.cases++;
      if (s.pass) entry.passed++;
      entry.total += s.score;
    }
  }
  return {
    cases: results.length,
    passed,
    failed: results.length - passed,
    passRate: results.length === 0 ? 1 : passed / results.length,
    meanScore: results.length === 0 ? 1 : results.reduce((sum, r) => sum + r.score, 0) / results.length,
    tokens: results.reduce((sum, r) => sum + r.tokens, 0),
    scorers: Object.fromEntries(
      Object.entries(scorers).map(([name, s]) => [
        name,
        { cases: s.cases, passed: s.passed, meanScore: s.total / s.cases },
      ]),
    ),
  };
}

/** A report of a run: {@link summariseEval} with the run's dataset, model and timing. */
export function evalReport(
  results: readonly EvalCaseResult[],
  run: { readonly dataset: string; readonly model?: string; readonly startedAt: Date; readonly durationMs: number },
): EvalReport {
  return {
    version: 1,
    dataset: run.dataset,
    ...(run.model !== undefined ? { model: run.model } : {}),
    startedAt: run.startedAt.toISOString(),
    durationMs: Math.round(run.durationMs),
    summary: summariseEval(results),
    cases: results,
  };
}
