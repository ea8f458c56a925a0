import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';

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

/** Handles a scheduled action in the EXECUTE phase of the point that scheduled it: `(payload, ctx) => void`. */
export function OnAction(key: string): MethodDecorator {
  return (target, method) => {
    appendMetadata<KeyedHandlerMetadata>(METADATA.actions, target.constructor, { method: String(method), key });
  };
}

/** A check run by `app.selfTest()`; it passes unless it throws or returns `false`. */
export function SelfTest(): MethodDecorator {
  return (target, method) => {
    appendMetadata<string>(METADATA.selfTests, target.constructor, String(method));
  };
}
