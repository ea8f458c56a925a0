import { createRequire } from 'node:module';
import type { Ajv, ErrorObject, ValidateFunction } from 'ajv';
import type { Ajv2019 } from 'ajv/dist/2019.js';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { INPUT_PATH, type DtoValidation, type FieldError } from './validate-dto.js';

/** A compiled JSON Schema check: the input unchanged when it passes, every failing field when not. */
export type SchemaValidator = (input: unknown) => DtoValidation<unknown>;

type AnyAjv = Ajv | Ajv2019 | Ajv2020;
type FormatsPlugin = (ajv: AnyAjv) => AnyAjv;
// ajv is loaded on the first schema compiled, not when Trellis is imported: most apps have only DTO tools.
const require = createRequire(import.meta.url);

// `strict: false`: schemas written for other tools carry keywords (`title`, vendor `x-*`) ajv does not know.
const OPTIONS = { strict: false, allErrors: true, validateFormats: true } as const;
let engines: { draft7: Ajv; draft2019: Ajv2019; draft2020: Ajv2020 } | undefined;

/**
 * Compiles a JSON Schema exactly as written (`$ref`, `$defs`, `oneOf`, formats) with ajv.
 * The draft follows the schema's `$schema`: 2020-12, 2019-09, otherwise draft-07 (which
 * ajv also reads `$defs` in). Nothing is coerced and no default is filled in: the tool
 * receives exactly the arguments that were checked.
 *
 * @throws TrellisError `UnsupportedSchema` when ajv cannot compile the schema (an unknown
 * `$ref`, an invalid keyword value), naming `where` it came from.
 *
 * @example
 * const check = compileJsonSchema({ type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] }, "tool 'count'");
 * check({ n: 'x' }) // { ok: false, errors: [{ path: 'n', messages: ['must be integer'] }] }
 */
export function compileJsonSchema(schema: Readonly<Record<string, unknown>>, where: string): SchemaValidator {
  let validate: ValidateFunction;
  try {
    validate = engineFor(schema).compile(withKnownDraft(schema));
  } catch (error) {
    throw new TrellisError(
      'UnsupportedSchema',
      `The JSON Schema of ${where} cannot be compiled: ${error instanceof Error ? error.message : String(error)}`,
      {
        hint: 'Fix the schema (every $ref must point inside it); it is used unchanged for validation',
        details: { where },
      },
    );
  }
  return (input) => {
    if (validate(input)) return { ok: true, value: input };
    return { ok: false, errors: fieldErrors(validate.errors ?? []) };
  };
}

function engineFor(schema: Readonly<Record<string, unknown>>): AnyAjv {
  if (!engines) {
    const formats = require('ajv-formats') as FormatsPlugin & { default?: FormatsPlugin };
    const addFormats = formats.default ?? formats;
    const { Ajv: Draft7 } = require('ajv') as { Ajv: new (options: object) => Ajv };
    const { Ajv2019: Draft2019 } = require('ajv/dist/2019.js') as { Ajv2019: new (options: object) => Ajv2019 };
    const { Ajv2020: Draft2020 } = require('ajv/dist/2020.js') as { Ajv2020: new (options: object) => Ajv2020 };
    engines = {
      draft7: addFormats(new Draft7(OPTIONS)),
      draft2019: addFormats(new Draft2019(OPTIONS)),
      draft2020: addFormats(new Draft2020(OPTIONS)),
    };
  }
  const draft = typeof schema.$schema === 'string' ? schema.$schema : '';
  if (draft.includes('2020-12')) return engines.draft2020;
  if (draft.includes('2019-09')) return engines.draft2019;
  return engines.draft7;
}

/** A `$schema` ajv has no meta-schema for (draft-04, a vendor URL) would fail to compile; the keywords still apply. */
function withKnownDraft(schema: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const draft = schema.$schema;
  if (typeof draft !== 'string' || /draft-0[67]|2019-09|2020-12/.test(draft)) return schema;
  const { $schema: _unknownDraft, ...rest } = schema;
  return rest;
}

/** ajv's errors grouped by field, in the same `a.b[0].c` paths the DTO validator uses. */
function fieldErrors(errors: readonly ErrorObject[]): FieldError[] {
  const byPath = new Map<string, string[]>();
  for (const error of errors) {
    let path = pointerToPath(error.instancePath);
    let message = error.message ?? error.keyword;
    if (error.keyword === 'required') {
      const missing = String((error.params as { missingProperty?: string }).missingProperty);
      path = path === INPUT_PATH ? missing : `${path}.${missing}`;
      message = 'is required';
    } else if (error.keyword === 'additionalProperties') {
      const extra = String((error.params as { additionalProperty?: string }).additionalProperty);
      path = path === INPUT_PATH ? extra : `${path}.${extra}`;
      message = 'is not allowed here';
    } else if (error.keyword === 'enum') {
      message = `must be one of ${JSON.stringify((error.params as { allowedValues?: unknown }).allowedValues)}`;
    }
    const list = byPath.get(path) ?? [];
    if (!list.includes(message)) list.push(message);
    byPath.set(path, list);
  }
  return [...byPath].map(([path, messages]) => ({ path, messages }));
}

/** `/filters/0/column` → `filters[0].column`; the empty pointer is the whole input. */
function pointerToPath(pointer: string): string {
  if (pointer === '') return INPUT_PATH;
  return pointer
    .slice(1)
    .split('/')
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((path, part) => (/^\d+$/.test(part) ? `${path}[${part}]` : path === '' ? part : `${path}.${part}`), '');
}
