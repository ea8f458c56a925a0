import type { TurnResult } from '../../../index.js';
import type { EvalCase } from './eval-case.js';

/** A tool call the turn made, with the arguments it ran with. */
export interface ObservedToolCall {
  readonly name: string;
  readonly args: unknown;
  readonly ok: boolean;
}

/** What one case's turn did: what scorers look at. */
export interface EvalObservation {
  readonly case: EvalCase;
  readonly result: TurnResult;
  /** The reply text ('' when there is none). */
  readonly reply: string;
  /** The calls that ran, in the order they started. */
  readonly toolCalls: readonly ObservedToolCall[];
  readonly latencyMs: number;
}

/** One scorer's verdict on one case. `score` is in [0, 1]. */
export interface ScoreResult {
  readonly scorer: string;
  readonly pass: boolean;
  readonly score: number;
  /** Why, in one line: what was expected and what came. */
  readonly detail: string;
}

/**
 * A scorer: looks at one case's observation and gives a score. `applies` says whether the
 * case asks for it (a case without `expected.regex` is not scored by the regex scorer).
 */
export interface Scorer {
  readonly name: string;
  applies(evalCase: EvalCase): boolean;
  score(observation: EvalObservation): ScoreResult | Promise<ScoreResult>;
}

/** A verdict that is all or nothing. */
export function verdict(scorer: string, pass: boolean, detail: string): ScoreResult {
  return { scorer, pass, score: pass ? 1 : 0, detail };
}

/** A value shown in a detail line, cut to a readable length. */
export function shown(value: unknown, max = 120): string {
  const text = typeof value === 'string' ? JSON.stringify(value) : (JSON.stringify(value) ?? String(value));
  return text.length > max ? `${text.slice(0, max)}…` : text;
}
