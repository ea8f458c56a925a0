import type { EvalCase } from './eval-case.js';
import { casesTagged, loadDataset } from './dataset-file.js';
import { runCase, scorersFor, type EvalCaseResult, type RunEvalOptions } from './eval-runner.js';

/** The parts of jest (or a jest-like runner) the helper uses; its globals by default. */
export interface EvalTestApi {
  describe(name: string, body: () => void): void;
  it(name: string, test: () => Promise<void>, timeoutMs?: number): void;
}

/** Options of {@link describeEval}. */
export interface DescribeEvalOptions extends Pick<RunEvalOptions, 'session' | 'dtos' | 'judge' | 'scorers'> {
  /** A JSONL file (read when the tests are collected), or the cases themselves. */
  readonly dataset: string | readonly EvalCase[];
  /** Only the cases with one of these tags. */
  readonly tags?: readonly string[];
  /** Each case's test timeout, in ms. Default: the runner's. */
  readonly timeoutMs?: number;
  /** `describe` and `it`, when the runner's globals are not injected (`import { describe, it } from '@jest/globals'`). */
  readonly api?: EvalTestApi;
}

/**
 * Runs an eval dataset as tests: one `describe` named `name`, one `it` a case (named by its
 * id and input). A case fails with every scorer that failed and why, and the reply.
 *
 * @example
 * import { describeEval, ScriptedModel } from 'trellis/testing';
 * let agent: Agent;
 * beforeAll(async () => { agent = (await createApp()).agent({ ...SPEC, model: scripted }); });
 * describeEval('report desk', { dataset: 'evals/desk.jsonl', session: (c) => agent.session(undefined, { context: c.context }) });
 */
export function describeEval(name: string, options: DescribeEvalOptions): void {
  // Needed in the published build, which compiles without jest's global types.
  // eslint-disable-next-line @typescript-eslint/no-unnecessary-type-assertion
  const found = options.api ?? (globalThis as unknown as Partial<EvalTestApi>);
  if (typeof found.describe !== 'function' || typeof found.it !== 'function') {
    throw new Error(
      "describeEval needs jest's describe and it: run it in a test file, or pass { api: { describe, it } } from '@jest/globals'",
    );
  }
  const api = found as EvalTestApi;
  const all = typeof options.dataset === 'string' ? loadDataset(options.dataset) : [...options.dataset];
  const cases = casesTagged(all, options.tags ?? []);
  const scorers = scorersFor(options);
  api.describe(name, () => {
    for (const evalCase of cases) {
      api.it(
        `${evalCase.id}: ${evalCase.input.length > 60 ? `${evalCase.input.slice(0, 59)}…` : evalCase.input}`,
        async () => {
          const result = await runCase(evalCase, options, scorers);
          if (!result.pass) throw new Error(failureText(result));
        },
        options.timeoutMs,
      );
    }
  });
}

/** Why a case failed, for a test's message: each failing scorer, then the reply and the calls. */
export function failureText(result: EvalCaseResult): string {
  const failed = result.scores
    .filter((s) => !s.pass)
    .map((s) => `  ✗ ${s.scorer} (${s.score.toFixed(2)}): ${s.detail}`);
  const calls = result.toolCalls.map((c) => `${c.name}${c.ok ? '' : ' (failed)'}`).join(' → ') || 'none';
  return [
    `eval case '${result.id}' failed:`,
    ...failed,
    `  reply: ${result.reply === '' ? '(none)' : JSON.stringify(result.reply.length > 400 ? `${result.reply.slice(0, 399)}…` : result.reply)}`,
    `  tool calls: ${calls}`,
  ].join('\n');
}
