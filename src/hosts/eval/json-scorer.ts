import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { validateSync, type ValidationError } from 'class-validator';
import { compileJsonSchema } from '../../engine/validation/json-schema-validator.js';
import { isObject } from './eval-case.js';
import { shown, verdict, type Scorer, type ScoreResult } from './scorer.js';

/** A class-validator DTO class, by the name datasets use in `expected.dto`. */
export type EvalDtos = Readonly<Record<string, new () => object>>;

/**
 * The JSON in a reply: the whole reply, else the first fenced ```json block, else the text
 * from the first `{` or `[` to the last `}` or `]`. `undefined` when none parses. (TurnResult
 * has no typed `output` on this branch yet, so typed output is scored from the reply text.)
 */
export function replyJson(reply: string): { found: true; value: unknown } | { found: false } {
  const attempts = [reply.trim()];
  const fenced = /```(?:json)?\s*([\s\S]*?)```/i.exec(reply);
  if (fenced) attempts.push(fenced[1]!.trim());
  const start = reply.search(/[{[]/);
  const end = Math.max(reply.lastIndexOf('}'), reply.lastIndexOf(']'));
  if (start >= 0 && end > start) attempts.push(reply.slice(start, end + 1));
  for (const text of attempts) {
    try {
      return { found: true, value: JSON.parse(text) as unknown };
    } catch {
      // the next way of finding it
    }
  }
  return { found: false };
}

/** Every field of `want` is in `got`, deep (arrays: same length, each item matched). */
export function partialMatch(want: unknown, got: unknown): boolean {
  if (Array.isArray(want))
    return Array.isArray(got) && want.length === got.length && want.every((w, i) => partialMatch(w, got[i]));
  if (isObject(want)) return isObject(got) && Object.entries(want).every(([k, v]) => partialMatch(v, got[k]));
  return Object.is(want, got);
}

/**
 * Scores the JSON of the reply: against `expected.schema` (JSON Schema, ajv), `expected.dto`
 * (a class-validator DTO from `dtos`) and `expected.json` (a deep partial match) — each present field checked.
 */
export function jsonScorer(dtos: EvalDtos = {}): Scorer {
  return {
    name: 'json',
    applies: (c) => c.expected?.schema !== undefined || c.expected?.dto !== undefined || c.expected?.json !== undefined,
    score: ({ case: c, reply }): ScoreResult => {
      const parsed = replyJson(reply);
      if (!parsed.found) return verdict('json', false, `the reply holds no JSON: ${shown(reply)}`);
      const { schema, dto, json } = c.expected!;
      const problems: string[] = [];
      if (schema) {
        const checked = compileJsonSchema(schema, `case '${c.id}'`)(parsed.value);
        if (!checked.ok)
          problems.push(`schema: ${checked.errors.map((e) => `${e.path}: ${e.messages.join(', ')}`).join('; ')}`);
      }
      if (dto !== undefined) {
        const type = dtos[dto];
        if (!type)
          problems.push(
            `no DTO named '${dto}' was given to the run (known: ${Object.keys(dtos).join(', ') || 'none'})`,
          );
        else if (!isObject(parsed.value)) problems.push(`${dto}: the JSON is not an object`);
        else {
          const errors = validateSync(plainToInstance(type, parsed.value), {
            whitelist: true,
            forbidNonWhitelisted: true,
          });
          if (errors.length > 0) problems.push(`${dto}: ${flatten(errors).join('; ')}`);
        }
      }
      if (json !== undefined && !partialMatch(json, parsed.value))
        problems.push(`expected to contain ${shown(json)}, got ${shown(parsed.value)}`);
      return verdict('json', problems.length === 0, problems.length === 0 ? 'matches' : problems.join(' | '));
    },
  };
}

function flatten(errors: readonly ValidationError[], prefix = ''): string[] {
  return errors.flatMap((e) => [
    ...Object.values(e.constraints ?? {}).map((m) => `${prefix}${m}`),
    ...flatten(e.children ?? [], `${prefix}${e.property}.`),
  ]);
}
