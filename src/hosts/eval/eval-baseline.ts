import { TrellisError } from '../../../index.js';
import { isObject } from './eval-case.js';
import type { EvalReport } from './eval-report.js';

/** A saved run to compare later runs with (`trellis eval --save-baseline`): each case's verdict and score. */
export interface EvalBaseline {
  readonly version: 1;
  readonly dataset: string;
  readonly passRate: number;
  readonly meanScore: number;
  readonly cases: Readonly<Record<string, { readonly pass: boolean; readonly score: number }>>;
}

/** How a run compares with a baseline. */
export interface BaselineComparison {
  /** The pass rate or the mean score fell by more than the threshold. */
  readonly regressed: boolean;
  readonly threshold: number;
  /** Positive when the run is worse. */
  readonly passRateDrop: number;
  readonly meanScoreDrop: number;
  /** Cases that passed in the baseline and fail now. */
  readonly newlyFailing: readonly string[];
  /** Cases that failed in the baseline and pass now. */
  readonly fixed: readonly string[];
  /** Cases whose score fell (they may still pass), with the baseline's and the run's score. */
  readonly lowered: readonly { readonly id: string; readonly from: number; readonly to: number }[];
  /** Cases of the baseline that this run did not have, and the other way round. */
  readonly missing: readonly string[];
  readonly added: readonly string[];
}

/** The baseline of a report. */
export function baselineOf(report: EvalReport): EvalBaseline {
  return {
    version: 1,
    dataset: report.dataset,
    passRate: report.summary.passRate,
    meanScore: report.summary.meanScore,
    cases: Object.fromEntries(report.cases.map((c) => [c.id, { pass: c.pass, score: round(c.score) }])),
  };
}

/**
 * Compares a run with a baseline. It regressed when its pass rate or its mean score fell
 * by more than `threshold` (0 to 1; 0, the default, tolerates no fall at all). Only the
 * cases both have are compared, so adding cases to a dataset is not a regression.
 */
export function compareWithBaseline(baseline: EvalBaseline, report: EvalReport, threshold = 0): BaselineComparison {
  if (!(threshold >= 0 && threshold <= 1))
    throw new TrellisError('InvalidOptions', `The regression threshold must be between 0 and 1, not ${threshold}`, {
      hint: 'e.g. --threshold 0.05 tolerates a fall of 5 points of pass rate or mean score',
    });
  const now = new Map(report.cases.map((c) => [c.id, c]));
  const shared = Object.keys(baseline.cases).filter((id) => now.has(id));
  const before = shared.map((id) => baseline.cases[id]!);
  const after = shared.map((id) => now.get(id)!);
  const rate = (xs: readonly { pass: boolean }[]) =>
    xs.length === 0 ? 1 : xs.filter((x) => x.pass).length / xs.length;
  const mean = (xs: readonly { score: number }[]) =>
    xs.length === 0 ? 1 : xs.reduce((s, x) => s + x.score, 0) / xs.length;
  const passRateDrop = round(rate(before) - rate(after));
  const meanScoreDrop = round(mean(before) - mean(after));
  // A hair of tolerance: scores are rounded when saved.
  const epsilon = 1e-6;
  return {
    regressed: passRateDrop > threshold + epsilon || meanScoreDrop > threshold + epsilon,
    threshold,
    passRateDrop,
    meanScoreDrop,
    newlyFailing: shared.filter((id) => baseline.cases[id]!.pass && !now.get(id)!.pass),
    fixed: shared.filter((id) => !baseline.cases[id]!.pass && now.get(id)!.pass),
    lowered: shared
      .filter((id) => round(now.get(id)!.score) < baseline.cases[id]!.score - epsilon)
      .map((id) => ({ id, from: baseline.cases[id]!.score, to: round(now.get(id)!.score) })),
    missing: Object.keys(baseline.cases).filter((id) => !now.has(id)),
    added: report.cases.map((c) => c.id).filter((id) => !(id in baseline.cases)),
  };
}

/** Reads a baseline file's text; `InvalidBaseline` names what is wrong. */
export function parseBaseline(text: string, file: string): EvalBaseline {
  let raw: unknown;
  try {
    raw = JSON.parse(text);
  } catch (error) {
    throw invalid(file, `it is not JSON (${error instanceof Error ? error.message : String(error)})`);
  }
  if (!isObject(raw) || raw.version !== 1 || !isObject(raw.cases))
    throw invalid(file, 'it is not a baseline of version 1 ({ "version": 1, "cases": { … } })');
  for (const [id, c] of Object.entries(raw.cases)) {
    if (!isObject(c) || typeof c.pass !== 'boolean' || typeof c.score !== 'number')
      throw invalid(file, `case '${id}' needs "pass" (true or false) and "score" (a number)`);
  }
  return raw as unknown as EvalBaseline;
}

function invalid(file: string, why: string): TrellisError {
  return new TrellisError('InvalidDataset', `The eval baseline ${file} cannot be used: ${why}`, {
    hint: `Write it again with: trellis eval <dataset> --save-baseline ${file}`,
  });
}

function round(x: number): number {
  return Math.round(x * 10_000) / 10_000;
}
