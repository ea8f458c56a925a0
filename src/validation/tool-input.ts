import { compileJsonSchema } from './json-schema-validator.js';
import { INPUT_PATH, validateDto, validateJson, type DtoValidation } from './validate-dto.js';

/**
 * Checks a tool's arguments — an object, or JSON text as a model writes it — and returns
 * the value the tool receives: the DTO instance, or for a raw-schema tool the parsed
 * arguments unchanged.
 */
export type ToolInputValidator = (args: unknown) => DtoValidation<unknown>;

const BLANK = /^\s*$/;

/**
 * The one validation recipe for a tool's input, built once at install: a class-validator
 * DTO (`@Tool({ input })`), or a raw JSON Schema checked exactly by ajv (`@Tool({ inputSchema })`).
 *
 * @throws TrellisError `UnsupportedSchema` when the raw schema does not compile.
 */
export function toolInputValidator(input: (new () => object) | undefined, inputSchema: Readonly<Record<string, unknown>> | undefined, where: string): ToolInputValidator {
  if (inputSchema === undefined) {
    const dto = input!;
    return (args) => (typeof args === 'string' ? validateJson(dto, args) : validateDto(dto, args));
  }
  const check = compileJsonSchema(inputSchema, where);
  return (args) => {
    if (typeof args !== 'string') return check(args);
    if (BLANK.test(args)) return check({});
    try {
      return check(JSON.parse(args));
    } catch (error) {
      return { ok: false, errors: [{ path: INPUT_PATH, messages: [`arguments are not valid JSON: ${(error as Error).message}`] }] };
    }
  };
}
