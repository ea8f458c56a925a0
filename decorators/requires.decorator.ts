import 'reflect-metadata';
import { METADATA } from './metadata-keys.js';
import type { ContextKeySpec } from '../src/contract/context-key.js';

/** Class-level keys are stored under this member name. */
export const CLASS_MEMBER = '*';

/**
 * Declares context dependencies of a tool or hook, or of the whole class. Declared keys
 * are resolved before the member runs (execution, then turn, then session) and may be
 * read through `ctx.get`; a missing required key fails with `MissingContext`.
 */
export function Requires(...keys: ContextKeySpec[]): ClassDecorator & MethodDecorator {
  return (target: object, method?: string | symbol) => {
    const owner = method === undefined ? target : (target as { constructor: object }).constructor;
    const member = method === undefined ? CLASS_MEMBER : String(method);
    const map = new Map<string, ContextKeySpec[]>(
      (Reflect.getOwnMetadata(METADATA.requires, owner) as Map<string, ContextKeySpec[]> | undefined) ?? [],
    );
    map.set(member, [...(map.get(member) ?? []), ...keys]);
    Reflect.defineMetadata(METADATA.requires, map, owner);
  };
}
