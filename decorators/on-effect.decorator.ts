import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';

/** A method bound to an effect or action key. */
export interface KeyedHandlerMetadata {
  readonly method: string;
  readonly key: string;
}

/** Handles an effect after the command that emitted it is committed: `(payload, ctx) => void`. */
export function OnEffect(key: string): MethodDecorator {
  return (target, method) => {
    appendMetadata<KeyedHandlerMetadata>(METADATA.effects, target.constructor, { method: String(method), key });
  };
}
