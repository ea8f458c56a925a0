import 'reflect-metadata';
import { METADATA } from './metadata-keys.js';
import { CLASS_MEMBER } from './requires.decorator.js';
import type { MiddlewareDeclaration, ToolMiddlewareClass } from '../src/contract/tool-middleware.js';

/**
 * Wraps every tool of a class, or one tool, in a middleware. Several stack: the first
 * declared (top-most) is outermost. Options are validated at install against the
 * middleware's `optionsType`.
 */
export function Middleware(type: ToolMiddlewareClass, options?: unknown): ClassDecorator & MethodDecorator {
  return (target: object, method?: string | symbol) => {
    const owner = method === undefined ? target : (target as { constructor: object }).constructor;
    const member = method === undefined ? CLASS_MEMBER : String(method);
    const map = new Map<string, MiddlewareDeclaration[]>(
      (Reflect.getOwnMetadata(METADATA.middleware, owner) as Map<string, MiddlewareDeclaration[]> | undefined) ?? [],
    );
    // Decorators apply bottom-up, so prepending keeps source order.
    map.set(member, [{ type, options }, ...(map.get(member) ?? [])]);
    Reflect.defineMetadata(METADATA.middleware, map, owner);
  };
}
