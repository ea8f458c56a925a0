import type { Session } from '../../../index.js';
import { describeError } from '../../../plugin.js';
import type { EvalCase } from './eval-case.js';
import { budgetScorer } from './budget-scorer.js';
import { jsonScorer, type EvalDtos } from './json-scorer.js';
import { judgeScorer, type JudgeOptions } from './judge-scorer.js';
import { verdict, type ObservedToolCall, type Scorer, type ScoreResult } from './scorer.js';
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
  /** The case did not run to a turn result: its session could not be made, `send` threw, or the run was cancelled first. */
  readonly error?: string;
  readonly tags?: readonly string[];
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
  /** Aborting it cancels the running turns and starts no more cases; those left are reported as not run. */
  readonly signal?: AbortSignal;
}

/** The scorer name of a case that did not run to a turn result. */
export const RUN_SCORER = 'run';

/**
 * Runs every case (up to `concurrency` at once) and scores it; results in dataset order.
 * A case whose session cannot be made, whose turn throws, or whose scorer throws fails on
 * its own, saying why; it never stops the other cases.
 */
export async function runEval(options: RunEvalOptions): Promise<EvalCaseResult[]> {
  const scorers = scorersFor(options);
  const results: EvalCaseResult[] = new Array(options.cases.length);
  let next = 0;
  let done = 0;
  const worker = async () => {
    while (next < options.cases.length) {
      const index = next++;
      const evalCase = options.cases[index]!;
      const result = options.signal?.aborted
        ? notRun(evalCase, 'not run: the eval was cancelled', 0)
        : await runCase(evalCase, options, scorers);
      results[index] = result;
      options.onCase?.(result, ++done, options.cases.length);
    }
  };
  await Promise.all(
    Array.from({ length: Math.max(1, Math.min(options.concurrency ?? 4, options.cases.length)) }, worker),
  );
  return results;
}

/** The scorers of a run: the built-in ones, the judge (or a stand-in that says none was given), then the caller's. */
export function scorersFor(options: Pick<RunEvalOptions, 'dtos' | 'judge' | 'scorers'>): Scorer[] {
  const noJudge: Scorer = {
    name: 'judge',
    applies: (c) => c.rubric !== undefined,
    score: () =>
      verdict(
        'judge',
        false,
        'the case has a rubric but no judge model was given (--judge-model, or eval.judge in the config)',
      ),
  };
  return [
    statusScorer,
    exactScorer,
    containsScorer,
    regexScorer,
    jsonScorer(options.dtos),
    trajectoryScorer,
    budgetScorer,
    options.judge ? judgeScorer(options.judge) : noJudge,
    ...(options.scorers ?? []),
  ];
}

/** Runs one case and scores it; never throws. */
export async function runCase(
  evalCase: EvalCase,
  options: Pick<RunEvalOptions, 'session' | 'signal'>,
  scorers: readonly Scorer[],
): Promise<EvalCaseResult> {
  const calls: (ObservedToolCall & { callId: string })[] = [];
  const started = performance.now();
  let result;
  let watch: { unsubscribe(): void } | undefined;
  try {
    const session = await options.session(evalCase);
    watch = session.events$.subscribe((event) => {
      if (event.type === 'tool.started')
        calls.push({ callId: event.callId, name: event.tool, args: event.args, ok: true });
      if (event.type === 'tool.finished') {
        const call = calls.find((c) => c.callId === event.callId);
        if (call) (call as { ok: boolean }).ok = event.ok;
      }
    });
    result = await session.send(evalCase.input, options.signal ? { signal: options.signal } : {});
  } catch (error) {
    return notRun(
      evalCase,
      `the case did not run: ${describeError(error)}`,
      performance.now() - started,
      observed(calls),
    );
  } finally {
    watch?.unsubscribe();
  }
  const latencyMs = performance.now() - started;
  const toolCalls = observed(calls);
  const observation = { case: evalCase, result, reply: result.reply ?? '', toolCalls, latencyMs };
  const scores: ScoreResult[] = [];
  for (const scorer of scorers) {
    if (!scorer.applies(evalCase)) continue;
    try {
      scores.push(await scorer.score(observation));
    } catch (error) {
      scores.push(verdict(scorer.name, false, `the scorer failed: ${describeError(error)}`));
    }
  }
  const score = scores.reduce((sum, s) => sum + s.score, 0) / scores.length;
  return {
    id: evalCase.id,
    pass: scores.every((s) => s.pass),
    score,
    scores,
    latencyMs,
    tokens: result.usage.totalTokens,
    reply: observation.reply,
    toolCalls,
    ...(evalCase.tags ? { tags: evalCase.tags } : {}),
  };
}

function observed(calls: readonly (ObservedToolCall & { callId: string })[]): ObservedToolCall[] {
  return calls.map(({ name, args, ok }) => ({ name, args, ok }));
}

function notRun(
  evalCase: EvalCase,
  why: string,
  latencyMs: number,
  toolCalls: readonly ObservedToolCall[] = [],
): EvalCaseResult {
  return {
    id: evalCase.id,
    pass: false,
    score: 0,
    scores: [verdict(RUN_SCORER, false, why)],
    latencyMs,
    tokens: 0,
    reply: '',
    toolCalls,
    error: why,
    ...(evalCase.tags ? { tags: evalCase.tags } : {}),
  };
}
