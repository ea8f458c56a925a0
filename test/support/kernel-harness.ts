import type { Trellis } from '../../index.js';
import { ContextLevel, ContextScope } from '../../src/engine/state/context-scope.js';
import type { GateDecision, HookSite } from '../../src/engine/hooks/hook-engine.js';
import type { HookResult } from '../../src/engine/hooks/hook-results.js';
import type { HookPoint } from '../../src/contract/hook-points.js';
import type { TrellisEvent } from '../../src/engine/events/trellis-event.js';
import { kernelOf } from '../../src/app/kernel-access.js';

/** Where a point runs in these tests: a session and, optionally, a turn and an execution level. */
export interface RunAt {
  readonly session?: string;
  readonly turn?: ContextLevel;
  readonly execution?: ContextLevel;
  /** The agent's `plugins` filter; empty means every plugin. */
  readonly active?: readonly string[];
}

/**
 * Drives hook points directly, as the agent loop will: builds the `HookRun` for a session
 * (with optional turn and execution levels) over the app's current registry, and runs a
 * point's active handlers through the app's hook engine.
 */
export class KernelHarness {
  constructor(readonly app: Trellis) {}

  run(at: RunAt = {}): HookSite {
    const kernel = kernelOf(this.app);
    const state = kernel.sessionState(at.session ?? 's1');
    return {
      scope: new ContextScope(state, at.turn, at.execution),
      schema: kernel.registry,
      hooks: kernel.registry.view(at.active ?? []).hooks,
    };
  }

  hooksAt(point: HookPoint, at: RunAt = {}) {
    return kernelOf(this.app).registry.view(at.active ?? []).hooks[point];
  }

  /** Runs a pipeline point; payloads are loosely typed here, since tests feed odd values on purpose. */
  pipeline<T>(point: HookPoint, value: T, at: RunAt = {}): Promise<T | HookResult> {
    return Promise.resolve(kernelOf(this.app).hooks.run(point, value as never, this.run(at))) as Promise<
      T | HookResult
    >;
  }

  parallel(point: HookPoint, payload: unknown, at: RunAt = {}): Promise<void> {
    return Promise.resolve(kernelOf(this.app).hooks.run(point, payload as never, this.run(at)));
  }

  collect<T>(point: HookPoint, payload: unknown, at: RunAt = {}): Promise<T[]> {
    return Promise.resolve(kernelOf(this.app).hooks.run(point, payload as never, this.run(at))) as unknown as Promise<
      T[]
    >;
  }

  gate(call: unknown, at: RunAt = {}): Promise<GateDecision> {
    return Promise.resolve(kernelOf(this.app).hooks.run('tool.gate', call as never, this.run(at)));
  }

  /** Session-level committed values of a session. */
  sessionValues(session = 's1'): Readonly<Record<string, unknown>> {
    return kernelOf(this.app).sessionState(session).session.values;
  }
}

/** A fresh turn level (optionally seeded), as the agent loop creates one per turn. */
export function turnLevel(values: Record<string, unknown> = {}): ContextLevel {
  return new ContextLevel(values);
}

/** A fresh execution level (optionally seeded), as the tool pipeline creates one per call. */
export function executionLevel(values: Record<string, unknown> = {}): ContextLevel {
  return new ContextLevel(values);
}

/** Records every event the app emits from now on; `stop()` unsubscribes. */
export function recordEvents(app: Trellis): {
  events: TrellisEvent[];
  of<K extends TrellisEvent['type']>(type: K): Extract<TrellisEvent, { type: K }>[];
  stop(): void;
} {
  const events: TrellisEvent[] = [];
  const subscription = app.events$.subscribe((e) => events.push(e));
  return {
    events,
    of: <K extends TrellisEvent['type']>(type: K) =>
      events.filter((e): e is Extract<TrellisEvent, { type: K }> => e.type === type),
    stop: () => subscription.unsubscribe(),
  };
}

/** Waits `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** Resolves as `promise` does, or rejects with `message` after `ms` (the timer is cleared either way). */
export async function within<T>(ms: number, promise: Promise<T>, message: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => (timer = setTimeout(() => reject(new Error(message)), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** Awaits a promise expected to reject and returns what it rejected with. */
export async function rejectionOf(promise: Promise<unknown> | (() => unknown)): Promise<unknown> {
  try {
    await (typeof promise === 'function' ? promise() : promise);
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection, but it resolved');
}

/** Calls `fn`, expecting a synchronous throw, and returns what it threw. */
export function thrownBy(fn: () => unknown): unknown {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw, but it returned');
}
