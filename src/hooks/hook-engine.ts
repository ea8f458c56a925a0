import { describeError } from '../errors/describe-error.js';
import { resolveDeclared } from '../context/context-pool.js';
import type { ContextSnapshot } from '../context/context-scope.js';
import { MemberContext } from '../context/member-context.js';
import { TrellisError } from '../errors/trellis-error.js';
import type { EventBus } from '../events/event-bus.js';
import type { RegisteredHook } from '../plugin/plugin-member.js';
import { exclusiveKeys, mergeCommands, type StateCommand } from '../state/state-command.js';
import type { Phase, StateEngine, StateTarget } from '../state/state-engine.js';
import { HOOK_POINTS, type HookPoint } from './hook-points.js';
import { hookResultKind, isHookResult, type HookResult, type SuspendTicket } from './hook-results.js';

/** Where a point runs: the state it reads and writes, and the turn's signal. */
export interface HookRun extends StateTarget {
  readonly signal?: AbortSignal;
}

/** A gate's resolved decision for one call. */
export type GateDecision =
  | { readonly kind: 'allow' }
  | { readonly kind: 'block'; readonly reason: string; readonly by: string }
  | { readonly kind: 'suspend'; readonly ticket: SuspendTicket; readonly by: string }
  | { readonly kind: 'setResult'; readonly value: unknown; readonly by: string };

const ALLOW: GateDecision = Object.freeze({ kind: 'allow' });
const GATE_RANK = { block: 3, suspend: 2, setResult: 1 } as const;

/**
 * Runs the handlers of a point in its mode (DESIGN §5): GATHER (handlers, commits), then
 * EXECUTE (scheduled actions). Handler lists come sorted from the registry; a point
 * without handlers returns at once.
 */
export class HookEngine {
  constructor(
    private readonly state: StateEngine,
    private readonly events: EventBus,
  ) {}

  /**
   * Each handler gets the previous one's value; a returned value replaces it, nothing
   * keeps it. Returns the final value, or the `block`/`cancel` result that stopped it.
   */
  async pipeline<T>(point: HookPoint, hooks: readonly RegisteredHook[], value: T, run: HookRun): Promise<T | HookResult> {
    if (hooks.length === 0) return value;
    const phase: Phase = { point, pending: undefined };
    let current: unknown = value;
    for (const hook of hooks) {
      const invoked = this.invoke(hook, current, run.scope.snapshot(), run, point, false);
      const first = invoked instanceof Promise ? await invoked : invoked;
      const { out } = first.dirty ? await this.commitWithRetry(hook, current, first, run, phase, point) : first;
      if (out === undefined) continue;
      if (isHookResult(out)) {
        this.assertAllowed(point, hook, out);
        if (phase.pending !== undefined) await this.state.execute(phase, run);
        return out;
      }
      current = out;
    }
    if (phase.pending !== undefined) await this.state.execute(phase, run);
    return current as T;
  }

  /** All handlers see one frozen snapshot and run concurrently; conflicting commands fall back to re-runs. */
  async parallel(point: HookPoint, hooks: readonly RegisteredHook[], payload: unknown, run: HookRun): Promise<void> {
    if (hooks.length === 0) return;
    await this.concurrent(point, hooks, payload, run);
  }

  /** Like `parallel`; each handler contributes an item or a list, merged in priority order. */
  async collect<T>(point: HookPoint, hooks: readonly RegisteredHook[], payload: unknown, run: HookRun): Promise<T[]> {
    if (hooks.length === 0) return [];
    const outs = await this.concurrent(point, hooks, payload, run);
    const items: T[] = [];
    for (const out of outs) {
      if (out === undefined || out === null) continue;
      if (Array.isArray(out)) items.push(...(out as T[]));
      else items.push(out as T);
    }
    return items;
  }

  /** Handlers one after another, each committed; `reverse` for shutdown. */
  async sequential(point: HookPoint, hooks: readonly RegisteredHook[], payload: unknown, run: HookRun, reverse = false): Promise<void> {
    if (hooks.length === 0) return;
    const phase: Phase = { point, pending: undefined };
    const ordered = reverse ? [...hooks].reverse() : hooks;
    for (const hook of ordered) {
      const ctx = await this.invoke(hook, payload, run.scope.snapshot(), run, point, false);
      if (ctx.out !== undefined && isHookResult(ctx.out)) this.assertAllowed(point, hook, ctx.out);
      await this.state.submit(ctx.command(), run, phase);
    }
    await this.state.execute(phase, run);
  }

  /**
   * Every gate handler is asked (read-only: gates are pure and may be asked again).
   * Block > Suspend > SetResult; on a tie the first wins and the conflict is reported.
   */
  async gate(point: HookPoint, hooks: readonly RegisteredHook[], call: unknown, run: HookRun): Promise<GateDecision> {
    if (hooks.length === 0) return ALLOW;
    let best: GateDecision = ALLOW;
    let bestRank = 0;
    const snapshot = run.scope.snapshot();
    for (const hook of hooks) {
      const invoked = this.invoke(hook, call, snapshot, run, point, true);
      const { out } = invoked instanceof Promise ? await invoked : invoked;
      if (out === undefined) continue;
      if (!isHookResult(out)) continue;
      const kind = hookResultKind(out);
      if (kind !== 'block' && kind !== 'suspend' && kind !== 'setResult') this.assertAllowed(point, hook, out);
      const rank = GATE_RANK[kind as keyof typeof GATE_RANK];
      const by = `${hook.plugin}.${hook.method}`;
      if (rank === bestRank && best.kind !== 'allow') {
        this.events.emit({ type: 'error', code: 'GateConflict', message: `Gates ${(best as { by: string }).by} and ${by} both decided '${kind}' at ${point}; the first (by priority) wins`, plugin: hook.plugin, point, sessionId: run.scope.state.sessionId });
        continue;
      }
      if (rank < bestRank) continue;
      bestRank = rank;
      const r = out as HookResult & Record<string, unknown>;
      best = kind === 'block' ? { kind, reason: r.reason as string, by } : kind === 'suspend' ? { kind, ticket: r.ticket as SuspendTicket, by } : { kind: 'setResult', value: r.value, by };
    }
    return best;
  }

  private async concurrent(point: HookPoint, hooks: readonly RegisteredHook[], payload: unknown, run: HookRun): Promise<unknown[]> {
    const snapshot = run.scope.snapshot();
    // Every handler starts before any result is looked at; promises are awaited only if some handler returned one.
    let pending = false;
    const started = hooks.map((hook): PromiseSettledResult<InvokedContext | Promise<InvokedContext>> => {
      try {
        const value = this.invoke(hook, payload, snapshot, run, point, false);
        if (value instanceof Promise) pending = true;
        return { status: 'fulfilled', value };
      } catch (reason) {
        return { status: 'rejected', reason };
      }
    });
    const settled = pending ? await Promise.allSettled(started.map((s) => (s.status === 'fulfilled' ? s.value : Promise.reject(s.reason)))) : (started as PromiseSettledResult<InvokedContext>[]);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    const ctxs = settled.map((s) => (s as PromiseFulfilledResult<InvokedContext>).value);
    const outs = ctxs.map((c) => c.out);
    // Partition in registration order into one compatible batch; the rest run again.
    const batch: StateCommand[] = [];
    const taken = new Set<string>();
    const deferred: number[] = [];
    ctxs.forEach((ctx, index) => {
      if (!ctx.dirty) return;
      const command = ctx.command();
      const keys = exclusiveKeys(command);
      if (keys.some((key) => taken.has(key))) deferred.push(index);
      else {
        for (const key of keys) taken.add(key);
        batch.push(command);
      }
    });
    const phase: Phase = { point, pending: undefined };
    if (batch.length > 0) await this.state.submit(mergeCommands(batch), run, phase);
    for (const index of deferred) {
      const ctx = await this.invoke(hooks[index]!, payload, run.scope.snapshot(), run, point, false);
      outs[index] = ctx.out;
      await this.state.submit(ctx.command(), run, phase);
    }
    if (phase.pending !== undefined) await this.state.execute(phase, run);
    return outs;
  }

  /** A pipeline handler's command can go stale when tool calls run concurrently: run it again once on fresh state. */
  private async commitWithRetry(hook: RegisteredHook, value: unknown, ctx: InvokedContext, run: HookRun, phase: Phase, point: HookPoint): Promise<InvokedContext> {
    if (!ctx.dirty) return ctx;
    try {
      await this.state.submit(ctx.command(), run, phase);
      return ctx;
    } catch (error) {
      if (!TrellisError.is(error, 'StaleState')) throw error;
      const again = await this.invoke(hook, value, run.scope.snapshot(), run, point, false);
      await this.state.submit(again.command(), run, phase);
      return again;
    }
  }

  /** Runs one handler; only a handler that returned a promise is awaited (most hooks are synchronous). */
  private invoke(hook: RegisteredHook, value: unknown, snapshot: ContextSnapshot, run: HookRun, point: HookPoint, readOnly: boolean): InvokedContext | Promise<InvokedContext> {
    if (this.events.observed) return this.invokeObserved(hook, value, snapshot, run, point, readOnly);
    let ctx: InvokedContext;
    let out: unknown;
    try {
      const deps = hook.requires.length === 0 ? NO_DEPS : resolveDeclared(hook.requires, snapshot, run.schema, `${hook.plugin}.${hook.method}`);
      ctx = new MemberContext(hook, snapshot, run.scope, run.schema, point, deps, readOnly) as InvokedContext;
      if (run.signal) ctx.signal = run.signal;
      out = hook.fn(value, ctx as never);
    } catch (error) {
      throw hookFailure(error, hook, point);
    }
    if (isThenable(out)) {
      return Promise.resolve(out).then(
        (resolved) => {
          ctx.out = resolved;
          return ctx;
        },
        (error: unknown) => {
          throw hookFailure(error, hook, point);
        },
      );
    }
    ctx.out = out;
    return ctx;
  }

  /** `invoke` with `hook.entered`/`hook.exited` events, when someone listens. */
  private async invokeObserved(hook: RegisteredHook, value: unknown, snapshot: ContextSnapshot, run: HookRun, point: HookPoint, readOnly: boolean): Promise<InvokedContext> {
    const observed = this.events.observed;
    const sessionId = run.scope.state.sessionId;
    const started = observed ? performance.now() : 0;
    if (observed) this.events.emit({ type: 'hook.entered', point, plugin: hook.plugin, sessionId });
    try {
      const deps = resolveDeclared(hook.requires, snapshot, run.schema, `${hook.plugin}.${hook.method}`);
      const ctx = new MemberContext(hook, snapshot, run.scope, run.schema, point, deps, readOnly) as InvokedContext;
      if (run.signal) ctx.signal = run.signal;
      ctx.out = await hook.fn(value, ctx as never);
      return ctx;
    } catch (error) {
      throw hookFailure(error, hook, point);
    } finally {
      if (observed) this.events.emit({ type: 'hook.exited', point, plugin: hook.plugin, durationMs: performance.now() - started, sessionId });
    }
  }

  private assertAllowed(point: HookPoint, hook: RegisteredHook, result: HookResult): void {
    const kind = hookResultKind(result);
    const allows = HOOK_POINTS[point].allows as readonly string[];
    if (allows.includes(kind)) return;
    throw new TrellisError('HookResultNotAllowed', `${hook.plugin}.${hook.method} returned ${kind}() at '${point}', which does not allow it (allowed: ${allows.length ? allows.map((a) => `${a}()`).join(', ') : 'a value or nothing'})`, {
      hint: kind === 'block' ? 'Block tool calls from tool.gate or tool.before_call, and messages from message.received' : kind === 'cancel' ? 'Cancel replies from message.sending' : 'Return a value, or nothing to keep the current one',
      details: { plugin: hook.plugin, point, result: kind },
    });
  }
}

type InvokedContext = MemberContext & { out: unknown };

const NO_DEPS: Readonly<Record<string, unknown>> = Object.freeze({});

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return value !== null && (typeof value === 'object' || typeof value === 'function') && typeof (value as { then?: unknown }).then === 'function';
}

/** A throw from a handler becomes a typed error naming the plugin and the point; a Trellis code is kept. */
export function hookFailure(error: unknown, hook: { plugin: string; method: string }, point: string): TrellisError {
  const where = `${hook.plugin}.${hook.method} at '${point}'`;
  if (TrellisError.is(error) && error.details['point'] !== undefined) return error;
  let message = describeError(error);
  const code = TrellisError.is(error) ? error.code : 'HookFailed';
  // Keep a wrapped error's hint as its hint (not only as text), without repeating it.
  const hint = TrellisError.is(error) ? error.hint : 'Fix the handler, or catch the error inside it: a throwing hook fails the turn';
  if (TrellisError.is(error) && hint && message.endsWith(`. ${hint}`)) message = message.slice(0, -(hint.length + 2));
  return new TrellisError(code, `${where}: ${message}`, {
    hint,
    kind: TrellisError.is(error) ? error.kind : 'user',
    retryable: TrellisError.is(error) ? error.retryable : false,
    details: { ...(TrellisError.is(error) ? error.details : {}), plugin: hook.plugin, point },
    cause: error,
  });
}
