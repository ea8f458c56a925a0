import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';
import type { KeyedHandlerMetadata } from './on-effect.decorator.js';

/** Handles a scheduled action in the EXECUTE phase of the point that scheduled it: `(payload, ctx) => void`. */
export function OnAction(key: string): MethodDecorator {
  return (target, method) => {
    appendMetadata<KeyedHandlerMetadata>(METADATA.actions, target.constructor, { method: String(method), key });
  };
}
