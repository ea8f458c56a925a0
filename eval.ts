import 'reflect-metadata';

/**
 * Evals for Trellis agents: `import { loadDataset, runEval } from 'trellis/eval'`. A JSONL
 * dataset of cases (input, context, expected reply, tool calls, budgets, a rubric), run
 * against an agent and scored; the figures, a JSON report, JUnit XML and a baseline to
 * compare later runs with. `trellis eval` is the same from the command line, and
 * `describeEval` in `trellis/testing` runs a dataset as jest tests. See docs/evals.md.
 */
export {
  parseDataset,
  type EvalCase,
  type EvalExpectation,
  type EvalBudgets,
  type ExpectedToolCall,
} from './src/hosts/eval/eval-case.js';
export { loadDataset, casesTagged } from './src/hosts/eval/dataset-file.js';
export {
  runEval,
  runCase,
  scorersFor,
  RUN_SCORER,
  type RunEvalOptions,
  type EvalCaseResult,
  type EvalSession,
} from './src/hosts/eval/eval-runner.js';
export {
  verdict,
  type Scorer,
  type ScoreResult,
  type EvalObservation,
  type ObservedToolCall,
} from './src/hosts/eval/scorer.js';
export { statusScorer, exactScorer, containsScorer, regexScorer } from './src/hosts/eval/text-scorers.js';
export { jsonScorer, replyJson, partialMatch, type EvalDtos } from './src/hosts/eval/json-scorer.js';
export { trajectoryScorer } from './src/hosts/eval/trajectory-scorer.js';
export { budgetScorer } from './src/hosts/eval/budget-scorer.js';
export { judgeScorer, type JudgeOptions } from './src/hosts/eval/judge-scorer.js';
export {
  summariseEval,
  evalReport,
  type EvalSummary,
  type EvalReport,
  type ScorerSummary,
} from './src/hosts/eval/eval-report.js';
export {
  baselineOf,
  compareWithBaseline,
  parseBaseline,
  type EvalBaseline,
  type BaselineComparison,
} from './src/hosts/eval/eval-baseline.js';
export { junitXml } from './src/hosts/eval/junit-report.js';
