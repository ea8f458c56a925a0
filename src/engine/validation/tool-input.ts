import { checkArgumentLength, checkArgumentShape, checkArgumentSize } from './argument-limits.js';
import { compileJsonSchema, type SchemaValidator } from './json-schema-validator.js';
import { INPUT_PATH, validateDto, validateJson } from './validate-dto.js';
import type { ToolInputValidator } from '../../contract/plugin-member.js';

export type { ToolInputValidator };

const BLANK = /^\s*$/;

/**
 * The one validation recipe for a tool's input, built once at install: a class-validator
 * DTO (`@Tool({ input })`), or a raw JSON Schema checked exactly by ajv (`@Tool({ inputSchema })`).
 * Both get the same limits first, whatever the schema allows: text over 1 MiB, a value whose
 * JSON would be, nesting deeper than 32 levels and the keys `__proto__`, `constructor` and
 * `prototype` at any depth are refused before the schema is asked and the tool runs.
 *
 * @throws TrellisError `UnsupportedSchema` when the raw schema does not compile.
 */
export function toolInputValidator(
  input: (new () => object) | undefined,
  inputSchema: Readonly<Record<string, unknown>> | undefined,
  where: string,
): ToolInputValidator {
  if (inputSchema === undefined) {
    const dto = input!;
    return (args) => {
      if (typeof args === 'string') return validateJson(dto, args);
      const tooBig = checkArgumentSize(args);
      return tooBig ? { ok: false, errors: [tooBig] } : validateDto(dto, args);
    };
  }
  const check = limited(compileJsonSchema(inputSchema, where));
  return (args) => {
    if (typeof args !== 'string') {
      const tooBig = checkArgumentSize(args);
      return tooBig ? { ok: false, errors: [tooBig] } : check(args);
    }
    const tooLong = checkArgumentLength(args);
    if (tooLong) return { ok: false, errors: [tooLong] };
    if (BLANK.test(args)) return check({});
    let parsed: unknown;
    try {
      parsed = JSON.parse(args);
    } catch (error) {
      return {
        ok: false,
        errors: [{ path: INPUT_PATH, messages: [`arguments are not valid JSON: ${(error as Error).message}`] }],
      };
    }
    return check(parsed);
  };
}

/** A schema check behind the shape limits a DTO tool has: depth, and no prototype keys. */
function limited(check: SchemaValidator): SchemaValidator {
  return (input) => {
    const shape = checkArgumentShape(input);
    return shape.length > 0 ? { ok: false, errors: shape } : check(input);
  };
}
