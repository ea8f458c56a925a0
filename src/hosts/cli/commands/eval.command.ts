import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { dirname, relative, resolve } from 'node:path';
import type { Command } from 'commander';
import { modelFromEnv, TrellisError, type ModelProvider } from '../../../../index.js';
import {
  baselineOf,
  casesTagged,
  compareWithBaseline,
  evalReport,
  junitXml,
  loadDataset,
  parseBaseline,
  runEval,
  type BaselineComparison,
  type EvalReport,
  type JudgeOptions,
} from '../../../../eval.js';
import { openAgent, withCliApp, type CliApp } from '../cli-app.js';
import { usageError } from '../cli-errors.js';
import type { CliIo } from '../cli-io.js';
import { EXIT_INTERRUPTED, interruptible } from '../interruptible.js';
import { EvalProgress } from '../render/eval-progress.js';
import { baselineLines, evalTableLines } from '../render/eval-table.js';

interface EvalOptions {
  concurrency: string;
  tag?: string[];
  json?: string;
  junit?: string;
  baseline?: string;
  threshold: string;
  saveBaseline?: string;
  judgeModel?: string;
  offline?: boolean;
}

/**
 * `trellis eval <dataset.jsonl>`: runs every case against the agent, each in a new session
 * kept in memory, and prints a table. Exit 1 when a case fails — or, with `--baseline`,
 * only when the run fell below the baseline by more than `--threshold`.
 */
export function registerEvalCommand(program: Command, io: CliIo): void {
  program
    .command('eval')
    .description(
      'run a JSONL dataset of cases against the agent, score each, print a table; exits 1 on a failing case, or with --baseline on a regression',
    )
    .argument('<dataset>', 'a .jsonl file: one case a line, { "input": "…", "expected": { … } } (docs/evals.md)')
    .option('-c, --concurrency <n>', 'cases run at once', '4')
    .option('-t, --tag <tag...>', 'only the cases with one of these tags')
    .option('--json <file>', 'write the report (figures, every case, its scores, reply and tool calls) as JSON')
    .option('--junit <file>', 'write the results as JUnit XML, for CI test reports')
    .option(
      '--baseline <file>',
      'compare with a saved run; exit 1 only if the pass rate or mean score fell by more than --threshold',
    )
    .option('--threshold <x>', 'the fall from the baseline tolerated, 0 to 1 (0.05 = 5 points)', '0')
    .option('--save-baseline <file>', 'save this run as the baseline to compare later runs with')
    .option(
      '--judge-model <name>',
      'the LLM-as-judge for cases with a rubric: a model name, with OPENAI_API_KEY or ANTHROPIC_API_KEY',
    )
    .option(
      '--offline',
      "run on the config's ModelProvider (e.g. a ScriptedModel) or the example's scripted model, never a provider's API",
    )
    .action(async (dataset: string, options: EvalOptions) => {
      const concurrency = Number(options.concurrency);
      if (!Number.isInteger(concurrency) || concurrency < 1 || concurrency > 64)
        throw usageError(
          `--concurrency must be a whole number from 1 to 64, not '${options.concurrency}'`,
          'e.g. --concurrency 8',
        );
      const threshold = Number(options.threshold);
      if (!(threshold >= 0 && threshold <= 1))
        throw usageError(
          `--threshold must be a number from 0 to 1, not '${options.threshold}'`,
          'e.g. --threshold 0.05 tolerates a fall of 5 points',
        );
      if (options.judgeModel !== undefined && options.offline)
        throw usageError(
          '--judge-model calls a provider, which --offline rules out',
          'Leave out one of them, or give a judge ModelProvider as eval.judge in a .ts config',
        );
      const file = resolve(io.cwd, dataset);
      const cases = casesTagged(loadDataset(file), options.tag ?? []);
      if (cases.length === 0)
        throw usageError(
          `No case of ${dataset} has the tag${options.tag!.length === 1 ? '' : 's'} ${options.tag!.join(', ')}`,
          'Check --tag against the "tags" of the cases',
        );
      // Read before the run, so a bad baseline fails at once rather than after every case ran.
      const baseline = options.baseline !== undefined ? readBaseline(resolve(io.cwd, options.baseline)) : undefined;

      const report = await withCliApp(
        io,
        async (cli) => {
          const agent = openAgent(cli, io, { offline: options.offline });
          const judge = judgeOf(cli, io, options);
          const progress = new EvalProgress(io.terminal, cases.length);
          const startedAt = new Date();
          const started = performance.now();
          const outcome = await interruptible(io, (signal) =>
            runEval({
              cases,
              concurrency,
              signal,
              session: (c) => agent.session(undefined, { context: { ...cli.context, ...c.context } }),
              ...(cli.config?.config.eval?.dtos && { dtos: cli.config.config.eval.dtos }),
              ...(cli.config?.config.eval?.scorers && { scorers: cli.config.config.eval.scorers }),
              ...(judge && { judge }),
              onCase: (result, done) => progress.case(result, done),
            }),
          );
          progress.end();
          if (outcome.interrupted) io.exitCode = EXIT_INTERRUPTED;
          return evalReport(outcome.value, {
            dataset: relative(io.cwd, file) || file,
            model: modelName(agent.spec.model),
            startedAt,
            durationMs: performance.now() - started,
          });
        },
        { memoryStore: true },
      );

      for (const line of evalTableLines(report)) io.out(line);
      if (options.json !== undefined) writeOut(resolve(io.cwd, options.json), `${JSON.stringify(report, null, 2)}\n`);
      if (options.junit !== undefined) writeOut(resolve(io.cwd, options.junit), junitXml(report));
      let comparison: BaselineComparison | undefined;
      if (baseline) {
        comparison = compareWithBaseline(baseline, report, threshold);
        for (const line of baselineLines(comparison, options.baseline!)) io.out(line);
      }
      if (options.saveBaseline !== undefined) {
        writeOut(resolve(io.cwd, options.saveBaseline), `${JSON.stringify(baselineOf(report), null, 2)}\n`);
        io.err(`note: saved this run as the baseline ${options.saveBaseline}`);
      }
      if (io.exitCode === EXIT_INTERRUPTED) return;
      verdict(report, comparison, options);
    });
}

/** Throws (exit 1) when the run fails: a regression past the threshold with a baseline; without one, any failing case (unless the run is being saved as the baseline). */
function verdict(report: EvalReport, comparison: BaselineComparison | undefined, options: EvalOptions): void {
  if (comparison) {
    if (!comparison.regressed) return;
    throw new TrellisError(
      'EvalRegressed',
      `The eval fell below the baseline ${options.baseline} by more than the threshold (pass rate down ${points(comparison.passRateDrop)}, mean score down ${points(comparison.meanScoreDrop)}, threshold ${points(comparison.threshold)})${comparison.newlyFailing.length > 0 ? `; failing now: ${comparison.newlyFailing.join(', ')}` : ''}`,
      {
        hint: 'Fix the change that made these cases worse; if the new behaviour is the right one, save a new baseline with --save-baseline',
      },
    );
  }
  if (options.saveBaseline !== undefined || report.summary.failed === 0) return;
  const failed = report.cases.filter((c) => !c.pass).map((c) => c.id);
  throw new TrellisError(
    'EvalFailed',
    `${failed.length} of ${report.summary.cases} eval cases failed: ${failed.join(', ')}`,
    {
      hint: 'See the table for why; --json <file> writes each case with its scores, reply and tool calls',
    },
  );
}

/** The judge: `--judge-model` from the environment, else the config's `eval.judge`. */
function judgeOf(cli: CliApp, io: CliIo, options: EvalOptions): JudgeOptions | undefined {
  const configured = cli.config?.config.eval;
  const passAt = configured?.judgePassAt !== undefined ? { passAt: configured.judgePassAt } : {};
  if (options.judgeModel !== undefined) {
    const found = modelFromEnv({ ...io.env, TRELLIS_MODEL: options.judgeModel }, '--judge-model');
    if (!found)
      throw usageError(
        `--judge-model ${options.judgeModel} needs OPENAI_API_KEY or ANTHROPIC_API_KEY`,
        "Set the key of the judge model's provider, or give a judge ModelProvider as eval.judge in a .ts config",
      );
    io.err(`note: judge model ${found.label}`);
    return { model: found.model, ...passAt };
  }
  const judge: ModelProvider | undefined = configured?.judge;
  return judge ? { model: judge, ...passAt } : undefined;
}

function readBaseline(file: string) {
  let text: string;
  try {
    text = readFileSync(file, 'utf8');
  } catch (error) {
    throw new TrellisError(
      'InvalidDataset',
      `The eval baseline ${file} cannot be read: ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? 'there is no such file' : (error as Error).message}`,
      {
        hint: 'Save one first: trellis eval <dataset> --save-baseline <file>',
      },
    );
  }
  return parseBaseline(text, file);
}

function writeOut(file: string, text: string): void {
  mkdirSync(dirname(file), { recursive: true });
  writeFileSync(file, text);
}

/** The model's name; a fallback list's first and how many follow. */
function modelName(model: ModelProvider | readonly ModelProvider[]): string {
  if (!Array.isArray(model)) return (model as ModelProvider).name;
  const list = model as readonly ModelProvider[];
  return list.length > 1 ? `${list[0]!.name} (+${list.length - 1} fallback)` : (list[0]?.name ?? '');
}

function points(x: number): string {
  return `${(x * 100).toFixed(1)} points`;
}
