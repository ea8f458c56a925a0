import type { JsonSchema } from '../../contract/model-provider.js';
import { checkArgumentLength, checkArgumentShape } from './argument-limits.js';
import { dropNullOptionals } from './openai-strict-schema.js';
import { INPUT_PATH, validateDto, type DtoValidation } from './validate-dto.js';

/** A fenced block (```json … ```) around the whole reply, as models write JSON in chat. */
const FENCED = /^```(?:json)?\s*([\s\S]*?)\s*```$/;

/**
 * A model's typed answer: its text parsed as JSON (a fenced block around it unwrapped), a
 * `null` for an optional field made absent (strict providers send one for every field left
 * out), then validated against the DTO with undeclared fields dropped. The value is the DTO
 * instance; the errors say, field by field, what to correct.
 *
 * @example
 * parseOutput(Verdict, '```json\n{"verdict":"refund"}\n```', dtoJsonSchema(Verdict)) // { ok: true, value: Verdict { verdict: 'refund' } }
 */
export function parseOutput<T extends object>(type: new () => T, text: string, schema: JsonSchema): DtoValidation<T> {
  const tooLong = checkArgumentLength(text);
  if (tooLong) return { ok: false, errors: [tooLong] };
  const json = text.trim().replace(FENCED, '$1');
  let value: unknown;
  try {
    value = JSON.parse(json);
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    return {
      ok: false,
      errors: [
        {
          path: INPUT_PATH,
          messages: [
            json === ''
              ? 'the reply is empty; it must be one JSON object'
              : `the reply is not one JSON object (${reason})`,
          ],
        },
      ],
    };
  }
  // Depth first: mapping the nulls back walks the value as deep as the schema lets it.
  const shape = checkArgumentShape(value, { refusePrototypeKeys: false });
  if (shape.length > 0) return { ok: false, errors: shape };
  return validateDto(type, dropNullOptionals(value, schema), { forbidUnknown: false });
}
