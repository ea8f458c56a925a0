import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';
import type { HookPoint } from '../src/contract/hook-points.js';

export interface HookOptions {
  /** Lower runs first; defaults to the plugin's priority; ties keep install order. */
  readonly priority?: number;
}

export interface HookMetadata {
  readonly method: string;
  readonly point: HookPoint;
  readonly priority?: number;
}

/** Subscribes a method to a hook point (the points and their modes: `HOOK_POINTS`): `(value, ctx: HookContext) => value | result | void`. */
export function Hook(point: HookPoint, options: HookOptions = {}): MethodDecorator {
  return (target, method) => {
    appendMetadata<HookMetadata>(METADATA.hooks, target.constructor, {
      method: String(method),
      point,
      priority: options.priority,
    });
  };
}

export interface TransformMetadata {
  readonly method: string;
  readonly priority?: number;
}

/** A pure step of the inference-request chain: `(request: InferenceRequest, ctx) => InferenceRequest`. */
export function Transform(options: HookOptions = {}): MethodDecorator {
  return (target, method) => {
    appendMetadata<TransformMetadata>(METADATA.transforms, target.constructor, {
      method: String(method),
      priority: options.priority,
    });
  };
}
