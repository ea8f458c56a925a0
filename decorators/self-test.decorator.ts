import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';

/** A check run by `app.selfTest()`; it passes unless it throws or returns `false`. */
export function SelfTest(): MethodDecorator {
  return (target, method) => {
    appendMetadata<string>(METADATA.selfTests, target.constructor, String(method));
  };
}
