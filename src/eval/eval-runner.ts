import type { Session } from '../../index.js';
import type { EvalCase } from './eval-case.js';
import { budgetScorer } from './budget-scorer.js';
import { jsonScorer, type EvalDtos } from './json-scorer.js';
import { judgeScorer, type JudgeOptions } from './judge-scorer.js';
import type { ObservedToolCall, Scorer, ScoreResult } from './scorer.js';
import { containsScorer, exactScorer, regexScorer, statusScorer } from './text-scorers.js';
import { trajectoryScorer } from './trajectory-scorer.js';

/** What the runner needs of a session: a fresh one per case. */
export type EvalSession = Pick<Session, 'send' | 'events$'>;

/** One case's outcome. */
export interface EvalCaseResult {
  readonly id: string;
  readonly pass: boolean;
  /** The mean of the scorers' scores. */
  readonly score: number;
  readonly scores: readonly ScoreResult[];
  readonly latencyMs: number;
  readonly tokens: number;
  readonly reply: string;
  readonly toolCalls: readonly ObservedToolCall[];
}

/** Options of {@link runEval}. */
export interface RunEvalOptions {
  readonly cases: readonly EvalCase[];
  /** A new session for a case, with the case's context. */
  readonly session: (evalCase: EvalCase) => EvalSession | Promise<EvalSession>;
  /** Cases run at once. Default 4. */
  readonly concurrency?: number;
  /** DTOs that cases name in `expected.dto`. */
  readonly dtos?: EvalDtos;
  /** The LLM-as-judge model, for cases with a `rubric`. Without one such cases fail, saying so. */
  readonly judge?: JudgeOptions;
  /** More scorers, run on every case they apply to. */
  readonly scorers?: readonly Scorer[];
  /** Called as each case ends. */
  readonly onCase?: (result: EvalCaseResult, done: number, total: number) => void;
}

/** Runs every case (up to `concurrency` at once) and scores it; results in dataset order. */
export async function runEval(options: RunEvalOptions): Promise<EvalCaseResult[]> {
  const noJudge: Scorer = { name: 'judge', applies: (c) => c.rubric !== undefined, score: () => ({ scorer: 'judge', pass: false, score: 0, detail: 'the case has a rubric but no judge model was given (--judge-model)' }) };
  const scorers = [statusScorer, exactScorer, containsScorer, regexScorer, jsonScorer(options.dtos), trajectoryScorer, budgetScorer, options.judge ? judgeScorer(options.judge) : noJudge, ...(options.scorers ?? [])];
  const results: EvalCaseResult[] = new Array(options.cases.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < options.cases.length) {
      const index = next++;
      const result = await runCase(options.cases[index]!, options, scorers);
      results[index] = result;
      options.onCase?.(result, ++done, options.cases.length);
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 4, options.cases.length)) }, worker));
  return results;
}

async function runCase(evalCase: EvalCase, options: RunEvalOptions, scorers: readonly Scorer[]): Promise<EvalCaseResult> {
  const session = await options.session(evalCase);
  const calls: (ObservedToolCall & { callId: string })[] = [];
  const watch = session.events$.subscribe((event) => {
    if (event.type === 'tool.started') calls.push({ callId: event.callId, name: event.tool, args: event.args, ok: true });
    if (event.type === 'tool.finished') {
      const call = calls.find((c) => c.callId === event.callId);
      if (call) (call as { ok: boolean }).ok = event.ok;
    }
  });
  const started = performance.now();
  let result;
  try {
    result = await session.send(evalCase.input);
  } finally {
    watch.unsubscribe();
  }
  const latencyMs = performance.now() - started;
  const toolCalls = calls.map(({ name, args, ok }) => ({ name, args, ok }));
  const observation = { case: evalCase, result, reply: result.reply ?? '', toolCalls, latencyMs };
  const scores: ScoreResult[] = [];
  for (const scorer of scorers) if (scorer.applies(evalCase)) scores.push(await scorer.score(observation));
  const score = scores.reduce((sum, s) => sum + s.score, 0) / scores.length;
  return { id: evalCase.id, pass: scores.every((s) => s.pass), score, scores, latencyMs, tokens: result.usage.totalTokens, reply: observation.reply, toolCalls };
}
