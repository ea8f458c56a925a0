import { TrellisError, type TurnStatus } from '../../../index.js';

/** A tool call a case expects: its name, and (optionally) arguments the call must contain. */
export interface ExpectedToolCall {
  readonly name: string;
  /** A partial match: every field given must be deep-equal in the call's arguments. */
  readonly args?: Readonly<Record<string, unknown>>;
}

/** What a case expects of the turn. Each field present adds one scorer. */
export interface EvalExpectation {
  /** The reply, exactly (surrounding whitespace ignored). */
  readonly output?: string;
  /** Text(s) the reply must contain (case-insensitive). */
  readonly contains?: string | readonly string[];
  /** A regular expression the reply must match (`/…/flags` or a bare pattern). */
  readonly regex?: string;
  /** A JSON Schema the reply's JSON must satisfy. */
  readonly schema?: Readonly<Record<string, unknown>>;
  /** The name of a class-validator DTO (given to the runner as `dtos`) the reply's JSON must validate as. */
  readonly dto?: string;
  /** A value the reply's JSON must contain (deep partial match). */
  readonly json?: unknown;
  /** The tool calls the turn must make. */
  readonly toolCalls?: readonly ExpectedToolCall[];
  /** `exact`: these calls and no others, in order; `in-order` (default): these, in this order, others between allowed; `any`: these, in any order. */
  readonly toolOrder?: 'exact' | 'in-order' | 'any';
  /** The turn's status. Default: `completed`. */
  readonly status?: TurnStatus;
}

/** Limits a case must stay within. */
export interface EvalBudgets {
  readonly latencyMs?: number;
  readonly tokens?: number;
  readonly rounds?: number;
}

/** One line of a dataset. */
export interface EvalCase {
  readonly id: string;
  readonly input: string;
  /** Session context (`app.*` keys) for this case, over the config's. */
  readonly context?: Readonly<Record<string, unknown>>;
  readonly expected?: EvalExpectation;
  readonly budgets?: EvalBudgets;
  /** For the LLM-as-judge scorer: what a good reply does. */
  readonly rubric?: string;
  readonly tags?: readonly string[];
}

const CASE_FIELDS = new Set(['id', 'input', 'context', 'expected', 'budgets', 'rubric', 'tags']);
const EXPECTED_FIELDS = new Set([
  'output',
  'contains',
  'regex',
  'schema',
  'dto',
  'json',
  'toolCalls',
  'toolOrder',
  'status',
]);
const BUDGET_FIELDS = new Set(['latencyMs', 'tokens', 'rounds']);
const STATUSES = new Set(['completed', 'suspended', 'blocked', 'cancelled', 'max_rounds', 'failed']);

/**
 * Reads a JSONL dataset: one case a line (blank lines and lines starting with `//` or `#`
 * skipped). Every problem of every line is reported at once, as one `InvalidDataset` error
 * naming the file and line.
 *
 * @example
 * parseDataset('{"input":"Who are our top customers?","expected":{"contains":"Ada"}}', 'desk.jsonl')
 */
export function parseDataset(text: string, file: string): EvalCase[] {
  const cases: EvalCase[] = [];
  const problems: string[] = [];
  const ids = new Set<string>();
  text.split(/\r?\n/).forEach((raw, index) => {
    const line = raw.trim();
    if (line === '' || line.startsWith('//') || line.startsWith('#')) return;
    const where = `line ${index + 1}`;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch (error) {
      problems.push(`${where}: not JSON (${error instanceof Error ? error.message : String(error)})`);
      return;
    }
    const found = checkCase(value, where);
    if (typeof found === 'string') return void problems.push(found);
    const id = found.id ?? `line-${index + 1}`;
    if (ids.has(id)) return void problems.push(`${where}: id '${id}' is used twice`);
    ids.add(id);
    cases.push({ ...found, id });
  });
  if (problems.length > 0) {
    throw new TrellisError(
      'InvalidDataset',
      `The eval dataset ${file} has ${problems.length === 1 ? 'a problem' : `${problems.length} problems`}:\n- ${problems.join('\n- ')}`,
      {
        hint: 'Each line is one JSON object: { "input": "…", "expected": { "contains": "…", "toolCalls": [{ "name": "…" }] } } (docs/evals.md)',
      },
    );
  }
  if (cases.length === 0)
    throw new TrellisError('InvalidDataset', `The eval dataset ${file} has no case`, {
      hint: 'Add one JSON object a line, with at least "input"',
    });
  return cases;
}

type Parsed = Omit<EvalCase, 'id'> & { readonly id?: string };

function checkCase(value: unknown, where: string): Parsed | string {
  if (!isObject(value)) return `${where}: a case is a JSON object`;
  const bad: string[] = [];
  for (const key of Object.keys(value)) if (!CASE_FIELDS.has(key)) bad.push(`unknown field '${key}'`);
  if (typeof value.input !== 'string' || value.input.trim() === '') bad.push('"input" must be a non-empty string');
  if (value.id !== undefined && (typeof value.id !== 'string' || value.id === ''))
    bad.push('"id" must be a non-empty string');
  if (value.context !== undefined && !isObject(value.context)) bad.push('"context" must be an object');
  if (value.rubric !== undefined && typeof value.rubric !== 'string') bad.push('"rubric" must be a string');
  if (value.tags !== undefined && !(Array.isArray(value.tags) && value.tags.every((t) => typeof t === 'string')))
    bad.push('"tags" must be a list of strings');
  if (value.expected !== undefined) bad.push(...expectationProblems(value.expected));
  if (value.budgets !== undefined) {
    if (!isObject(value.budgets)) bad.push('"budgets" must be an object');
    else
      for (const [key, limit] of Object.entries(value.budgets)) {
        if (!BUDGET_FIELDS.has(key)) bad.push(`unknown budget '${key}' (latencyMs, tokens, rounds)`);
        else if (typeof limit !== 'number' || !(limit > 0)) bad.push(`budget '${key}' must be a positive number`);
      }
  }
  return bad.length > 0 ? `${where}: ${bad.join('; ')}` : (value as unknown as Parsed);
}

function expectationProblems(expected: unknown): string[] {
  if (!isObject(expected)) return ['"expected" must be an object'];
  const bad: string[] = [];
  for (const key of Object.keys(expected)) if (!EXPECTED_FIELDS.has(key)) bad.push(`unknown field 'expected.${key}'`);
  const { output, contains, regex, schema, dto, toolCalls, toolOrder, status } = expected;
  if (output !== undefined && typeof output !== 'string') bad.push('"expected.output" must be a string');
  if (
    contains !== undefined &&
    !(typeof contains === 'string' || (Array.isArray(contains) && contains.every((c) => typeof c === 'string')))
  )
    bad.push('"expected.contains" must be a string or a list of strings');
  if (regex !== undefined) {
    if (typeof regex !== 'string') bad.push('"expected.regex" must be a string');
    else {
      try {
        toRegExp(regex);
      } catch (error) {
        bad.push(
          `"expected.regex" is not a regular expression (${error instanceof Error ? error.message : String(error)})`,
        );
      }
    }
  }
  if (schema !== undefined && !isObject(schema)) bad.push('"expected.schema" must be a JSON Schema object');
  if (dto !== undefined && typeof dto !== 'string') bad.push('"expected.dto" must be the name of a DTO');
  if (toolOrder !== undefined && !['exact', 'in-order', 'any'].includes(toolOrder as string))
    bad.push('"expected.toolOrder" is exact, in-order or any');
  if (status !== undefined && !STATUSES.has(status as string))
    bad.push(`"expected.status" is one of ${[...STATUSES].join(', ')}`);
  if (toolCalls !== undefined) {
    if (!Array.isArray(toolCalls)) bad.push('"expected.toolCalls" must be a list');
    else
      toolCalls.forEach((call, i) => {
        if (!isObject(call) || typeof call.name !== 'string') bad.push(`"expected.toolCalls[${i}]" needs a "name"`);
        else if (call.args !== undefined && !isObject(call.args))
          bad.push(`"expected.toolCalls[${i}].args" must be an object`);
      });
  }
  return bad;
}

/** `/pattern/flags` or a bare pattern. */
export function toRegExp(text: string): RegExp {
  const literal = /^\/(.*)\/([a-z]*)$/s.exec(text);
  return literal ? new RegExp(literal[1]!, literal[2]) : new RegExp(text);
}

export function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
