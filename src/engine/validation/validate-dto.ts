import 'reflect-metadata';
import { plainToInstance, type ClassTransformOptions } from 'class-transformer';
import { validateSync, ValidationTypes, type ValidationError, type ValidatorOptions } from 'class-validator';
import { checkArgumentLength, checkArgumentShape } from './argument-limits.js';
import { validateFlat } from './compiled-dto.js';

import type { FieldError } from '../../contract/field-error.js';

export type { FieldError };

/** The outcome of {@link validateDto}: the transformed instance, or every field that is wrong. */
export type DtoValidation<T> =
  { readonly ok: true; readonly value: T } | { readonly ok: false; readonly errors: readonly FieldError[] };

/** How {@link validateDto} treats input the DTO does not declare. */
export interface ValidateDtoOptions {
  /**
   * `true` (the default) reports properties the DTO does not declare as errors; `false`
   * silently drops them. Either way the instance never carries undeclared input.
   */
  readonly forbidUnknown?: boolean;
}

/** The path of a FieldError about the input as a whole (not an object, not JSON). */
export const INPUT_PATH = '(input)';

// Built once: validation runs on every tool call.
const TRANSFORM: ClassTransformOptions = { enableImplicitConversion: false, exposeDefaultValues: true };
const VALIDATION_ERROR = { target: false, value: false } as const;
const FORBID_UNKNOWN: ValidatorOptions = {
  whitelist: true,
  forbidNonWhitelisted: true,
  forbidUnknownValues: false,
  validationError: VALIDATION_ERROR,
};
const STRIP_UNKNOWN: ValidatorOptions = { ...FORBID_UNKNOWN, forbidNonWhitelisted: false };
const BLANK = /^\s*$/;
const REFUSE_PROTOTYPE_KEYS = { refusePrototypeKeys: true } as const;
const KEEP_PROTOTYPE_KEYS = { refusePrototypeKeys: false } as const;

/**
 * Turns plain input (a tool's arguments, a plugin's config) into an instance of a
 * class-validator DTO and validates it, synchronously. Types are never coerced (`'5'` is
 * not a number); nested DTOs are built through class-transformer's `@Type`; defaults set
 * in the class stay when a field is absent. Being synchronous, it skips async custom
 * validators; a DTO's own `@Transform` or validator that throws is not caught here.
 *
 * @example
 * const r = validateDto(SearchInput, { sql: 'select 1', limit: '5' });
 * if (!r.ok) return formatFieldErrors(r.errors); // "- limit: limit must be an integer number"
 */
export function validateDto<T extends object>(
  type: new () => T,
  input: unknown,
  options?: ValidateDtoOptions,
): DtoValidation<T> {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) {
    return {
      ok: false,
      errors: [{ path: INPUT_PATH, messages: [`arguments must be a JSON object, not ${kindOf(input)}`] }],
    };
  }
  const strip = options?.forbidUnknown === false;
  // Refusing unknown keys, the fast path goes first: it answers only for a flat object of
  // primitives whose every key the DTO declares, which the shape check would pass. (Stripping,
  // it skips unknown keys unseen, whose nesting the shape check still limits: it goes second.)
  if (!strip) {
    const flat = validateFlat(type, input as Record<string, unknown>, false);
    if (flat !== undefined) return { ok: true, value: flat };
  }
  const shape = checkArgumentShape(input, strip ? KEEP_PROTOTYPE_KEYS : REFUSE_PROTOTYPE_KEYS);
  if (shape.length > 0) return { ok: false, errors: shape };
  if (strip) {
    const flat = validateFlat(type, input as Record<string, unknown>, true);
    if (flat !== undefined) return { ok: true, value: flat };
  }
  const value = plainToInstance(type, input, TRANSFORM);
  const errors = validateSync(value, strip ? STRIP_UNKNOWN : FORBID_UNKNOWN);
  if (errors.length === 0) return { ok: true, value };
  const fieldErrors: FieldError[] = [];
  collectFieldErrors(errors, '', input, fieldErrors);
  return fieldErrors.length === 0 ? { ok: true, value } : { ok: false, errors: fieldErrors };
}

/**
 * {@link validateDto} over JSON text, as models write tool arguments. Text that does not
 * parse is one `(input)` error; an empty string counts as `{}` (some models send it for
 * a tool without arguments).
 */
export function validateJson<T extends object>(
  type: new () => T,
  text: string,
  options?: ValidateDtoOptions,
): DtoValidation<T> {
  const tooLong = checkArgumentLength(text);
  if (tooLong) return { ok: false, errors: [tooLong] };
  let input: unknown = {};
  if (!BLANK.test(text)) {
    try {
      input = JSON.parse(text);
    } catch (error) {
      const reason = error instanceof Error ? error.message : String(error);
      return { ok: false, errors: [{ path: INPUT_PATH, messages: [`arguments are not valid JSON: ${reason}`] }] };
    }
  }
  return validateDto(type, input, options);
}

/**
 * Renders errors one line per field, for a model to read and correct its call.
 *
 * @example
 * formatFieldErrors(errors) // "- sql: sql must be a string\n- filters[0].op: op must be one of ..."
 */
export function formatFieldErrors(errors: readonly FieldError[]): string {
  return errors.map((error) => `- ${error.path}: ${error.messages.join('; ')}`).join('\n');
}

/**
 * Flattens class-validator's error tree. `plain` is the input node at the same depth: it
 * tells array items from properties, and which properties the caller actually sent.
 */
function collectFieldErrors(
  errors: readonly ValidationError[],
  prefix: string,
  plain: unknown,
  out: FieldError[],
): void {
  const isList = Array.isArray(plain);
  for (const error of errors) {
    const path = isList
      ? `${prefix}[${error.property}]`
      : prefix === ''
        ? error.property
        : `${prefix}.${error.property}`;
    const messages = error.constraints ? constraintMessages(error, plain) : [];
    if (messages.length > 0) out.push({ path, messages });
    if (error.children && error.children.length > 0) {
      collectFieldErrors(error.children, path, childOf(plain, error.property), out);
    }
  }
}

function constraintMessages(error: ValidationError, plain: unknown): string[] {
  const constraints = error.constraints ?? {};
  // With ES2022 class fields every declared property is an own key of the instance, so the
  // whitelist also flags undecorated fields the caller never sent; only sent ones are unknown.
  if (ValidationTypes.WHITELIST in constraints && !hasOwn(plain, error.property)) return [];
  return Object.values(constraints);
}

function childOf(plain: unknown, key: string): unknown {
  return hasOwn(plain, key) ? (plain as Record<string, unknown>)[key] : undefined;
}

function hasOwn(plain: unknown, key: string): boolean {
  return typeof plain === 'object' && plain !== null && Object.prototype.hasOwnProperty.call(plain, key);
}

function kindOf(input: unknown): string {
  if (input === null) return 'null';
  if (Array.isArray(input)) return 'an array';
  return input === undefined ? 'undefined' : `a ${typeof input}`;
}
