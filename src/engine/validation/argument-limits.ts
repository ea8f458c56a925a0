import type { FieldError } from '../../contract/field-error.js';

/** Nesting deeper than this (objects and arrays) is refused before a DTO is built. */
export const MAX_ARGUMENT_DEPTH = 32;

/** Argument text longer than this many characters is refused before it is parsed. */
export const MAX_ARGUMENT_CHARS = 1_048_576;

/**
 * Keys that name JavaScript's object machinery. `JSON.parse` makes `__proto__` an own
 * property, which class-transformer then skips silently; they are refused instead, like
 * any property the DTO does not declare.
 */
const PROTOTYPE_KEYS: ReadonlySet<string> = new Set(['__proto__', 'constructor', 'prototype']);

/**
 * Checks the shape of plain input before class-transformer and class-validator walk it
 * (both recurse, so ~3,000 levels overflow the stack): nesting at most
 * {@link MAX_ARGUMENT_DEPTH} deep, and no prototype keys at any depth (unless `refusePrototypeKeys: false`, where
 * the caller drops undeclared input anyway). The walk is
 * iterative, so no input can overflow it. Returns the errors, empty when the shape is fine.
 */
export function checkArgumentShape(
  input: unknown,
  options: { readonly refusePrototypeKeys?: boolean; readonly maxDepth?: number } = {},
): FieldError[] {
  const maxDepth = options.maxDepth ?? MAX_ARGUMENT_DEPTH;
  const refuse = options.refusePrototypeKeys !== false;
  // The common case, a flat object of primitives without prototype keys, needs no walk.
  if (maxDepth > 1 && isFlatObject(input)) return [];
  const errors: FieldError[] = [];
  const stack: { value: unknown; path: string; depth: number }[] = [{ value: input, path: '', depth: 0 }];
  while (stack.length > 0) {
    const { value, path, depth } = stack.pop()!;
    if (typeof value !== 'object' || value === null) continue;
    if (depth >= maxDepth) {
      errors.push({
        path: path || '(input)',
        messages: [`arguments are nested deeper than ${maxDepth} levels; send a flatter value`],
      });
      return errors;
    }
    if (Array.isArray(value)) {
      for (let i = value.length - 1; i >= 0; i -= 1)
        stack.push({ value: value[i], path: `${path}[${i}]`, depth: depth + 1 });
      continue;
    }
    const children: typeof stack = [];
    for (const key of Object.keys(value)) {
      const child = path === '' ? key : `${path}.${key}`;
      if (PROTOTYPE_KEYS.has(key)) {
        if (refuse) errors.push({ path: child, messages: [`property ${key} should not exist`] });
      } else children.push({ value: (value as Record<string, unknown>)[key], path: child, depth: depth + 1 });
    }
    for (let i = children.length - 1; i >= 0; i -= 1) stack.push(children[i]!);
  }
  return errors;
}

/** A non-array object whose own values are all primitives and whose keys are all ordinary. */
function isFlatObject(input: unknown): boolean {
  if (typeof input !== 'object' || input === null || Array.isArray(input)) return false;
  for (const key in input) {
    if (!Object.prototype.hasOwnProperty.call(input, key)) continue;
    const value = (input as Record<string, unknown>)[key];
    if ((typeof value === 'object' && value !== null) || PROTOTYPE_KEYS.has(key)) return false;
  }
  return true;
}

/**
 * The error for arguments given as a value (not text) whose JSON would be longer than
 * `maxChars`, or undefined when they fit: the length of every key and string, plus one per
 * value, counted by an iterative walk that stops at the limit (so a 20 MB string, or 200,000
 * keys, are refused as their text would be). Run it after {@link checkArgumentShape}.
 */
export function checkArgumentSize(input: unknown, maxChars: number = MAX_ARGUMENT_CHARS): FieldError | undefined {
  let size = 0;
  const stack: unknown[] = [input];
  while (stack.length > 0) {
    const value = stack.pop();
    size += 1;
    if (typeof value === 'string') size += value.length;
    else if (typeof value === 'object' && value !== null) {
      if (Array.isArray(value)) {
        for (const item of value) stack.push(item);
      } else {
        for (const key of Object.keys(value)) {
          size += key.length + 3;
          stack.push((value as Record<string, unknown>)[key]);
        }
      }
    }
    if (size > maxChars) {
      return {
        path: '(input)',
        messages: [`arguments are more than ${maxChars} characters long as JSON, more than allowed; send less`],
      };
    }
  }
  return undefined;
}

/** The error for argument text over {@link MAX_ARGUMENT_CHARS}, or undefined when it fits. */
export function checkArgumentLength(text: string, maxChars: number = MAX_ARGUMENT_CHARS): FieldError | undefined {
  if (text.length <= maxChars) return undefined;
  return {
    path: '(input)',
    messages: [`arguments are ${text.length} characters long, more than the ${maxChars} characters allowed; send less`],
  };
}
