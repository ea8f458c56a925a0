import { performance } from 'node:perf_hooks';
import { describeError } from '../../errors/describe-error.js';
import type { ContextSnapshot } from '../context/context-level.js';
import { commandOf } from '../context/member-context.js';
import { invokeMember, type Invocation } from '../context/member-invoker.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { EventBus } from '../events/event-bus.js';
import type { RegisteredHook } from '../../contract/plugin-member.js';
import { exclusiveKeys, mergeCommands, type StateCommand } from '../../contract/state-command.js';
import type { Phase, StateEngine, StateTarget } from '../state/state-engine.js';
import type { TurnSpend } from '../../contract/turn-spend.js';
import { HOOK_POINTS, type HookPayload, type HookPayloads, type HookPoint } from '../../contract/hook-points.js';
import { hookResultKind, isHookResult, type HookResult, type SuspendTicket } from './hook-results.js';

/** The handlers active at each point: the agent's view of the registry. */
export type HookTable = Readonly<Record<HookPoint, readonly RegisteredHook[]>>;

/** Where a point runs: the state it reads and writes, its handlers and the turn's signal. */
export interface HookSite extends StateTarget {
  readonly hooks: HookTable;
  readonly signal?: AbortSignal;
  /** A turn's spend: each handler's wall time is added to its plugin's (`usage.byPlugin[p].hookMs`). */
  readonly spend?: TurnSpend;
}

/** A gate's resolved decision for one call. */
export type GateDecision =
  | { readonly kind: 'allow' }
  | { readonly kind: 'block'; readonly reason: string; readonly by: string }
  | { readonly kind: 'suspend'; readonly ticket: SuspendTicket; readonly by: string }
  | { readonly kind: 'setResult'; readonly value: unknown; readonly by: string };

type Spec<P extends HookPoint> = (typeof HOOK_POINTS)[P];
type StopOf<P extends HookPoint> = [Spec<P>['allows'][number]] extends [never]
  ? never
  : HookResult & { readonly reason: string };

/**
 * What running a point gives back, by its mode: a pipeline the final value (or the
 * `block`/`cancel` that stopped it, where the point allows one); collect the merged items;
 * a gate its decision; parallel and sequential points nothing.
 */
export type HookOutcome<P extends HookPoint> = Spec<P>['mode'] extends 'pipeline'
  ? (HookPayloads[P] extends { value: infer V } ? V : never) | StopOf<P>
  : Spec<P>['mode'] extends 'collect'
    ? (HookPayloads[P] extends { item: infer I } ? I : never)[]
    : Spec<P>['mode'] extends 'gate'
      ? GateDecision
      : void;

/** A value, or a promise of it: `run` answers at once when a point has no handlers. */
export type Awaitable<T> = T | Promise<T>;

const ALLOW: GateDecision = Object.freeze({ kind: 'allow' });
const GATE_RANK = { block: 3, suspend: 2, setResult: 1 } as const;
const NO_ITEMS: readonly never[] = Object.freeze([]);

/**
 * Runs the handlers of a point in the mode the hook catalog gives it:
 * GATHER (handlers, commits), then EXECUTE (scheduled actions). Handler lists come sorted
 * from the registry; a point without handlers returns at once.
 */
export class HookEngine {
  constructor(
    private readonly state: StateEngine,
    private readonly events: EventBus,
  ) {}

  /**
   * Runs `point` with `payload` at `site`.
   *
   * @example
   * const received = await hooks.run('message.received', text, site);
   * if (isStop(received)) return blocked(received.reason);
   */
  run<P extends HookPoint>(point: P, payload: HookPayload<P>, site: HookSite): Awaitable<HookOutcome<P>> {
    const hooks = site.hooks[point];
    const spec: { mode: string; reverse?: boolean } = HOOK_POINTS[point];
    // A point without handlers answers synchronously: the hot path awaits only real work.
    let out: unknown;
    switch (spec.mode) {
      case 'pipeline':
        out = hooks.length === 0 ? payload : this.pipeline(point, hooks, payload, site);
        break;
      case 'collect':
        out = hooks.length === 0 ? NO_ITEMS : this.collect(point, hooks, payload, site);
        break;
      case 'gate':
        out = hooks.length === 0 ? ALLOW : this.gate(point, hooks, payload, site);
        break;
      case 'parallel':
        out = hooks.length === 0 ? undefined : this.concurrent(point, hooks, payload, site);
        break;
      default:
        out = hooks.length === 0 ? undefined : this.sequential(point, hooks, payload, site, spec.reverse === true);
    }
    return out as Awaitable<HookOutcome<P>>;
  }

  /** Each handler gets the previous one's value; a returned value replaces it, nothing keeps it. */
  private async pipeline(
    point: HookPoint,
    hooks: readonly RegisteredHook[],
    value: unknown,
    site: HookSite,
  ): Promise<unknown> {
    const phase: Phase = { point, pending: undefined };
    let current: unknown = value;
    for (const hook of hooks) {
      const invoked = this.invoke(hook, current, site.scope.snapshot(), site, point, false);
      const first = invoked instanceof Promise ? await invoked : invoked;
      const { out } = commandOf(first.ctx)
        ? await this.commitWithRetry(hook, current, first, site, phase, point)
        : first;
      if (out === undefined) continue;
      if (isHookResult(out)) {
        this.assertAllowed(point, hook, out);
        if (phase.pending !== undefined) await this.state.execute(phase, site);
        return out;
      }
      current = out;
    }
    if (phase.pending !== undefined) await this.state.execute(phase, site);
    return current;
  }

  /** Like parallel; each handler contributes an item or a list, merged in priority order. */
  private async collect(
    point: HookPoint,
    hooks: readonly RegisteredHook[],
    payload: unknown,
    site: HookSite,
  ): Promise<unknown[]> {
    const outs = await this.concurrent(point, hooks, payload, site);
    const items: unknown[] = [];
    for (const out of outs) {
      if (out === undefined || out === null) continue;
      if (Array.isArray(out)) items.push(...(out as unknown[]));
      else items.push(out);
    }
    return items;
  }

  /** Handlers one after another, each committed; `reverse` for shutdown. */
  private async sequential(
    point: HookPoint,
    hooks: readonly RegisteredHook[],
    payload: unknown,
    site: HookSite,
    reverse: boolean,
  ): Promise<void> {
    const phase: Phase = { point, pending: undefined };
    const ordered = reverse ? [...hooks].reverse() : hooks;
    for (const hook of ordered) {
      const { ctx, out } = await this.invoke(hook, payload, site.scope.snapshot(), site, point, false);
      if (out !== undefined && isHookResult(out)) this.assertAllowed(point, hook, out);
      const command = commandOf(ctx);
      if (command) await this.state.submit(command, site, phase);
    }
    await this.state.execute(phase, site);
  }

  /**
   * Every gate handler is asked (read-only: gates are pure and may be asked again).
   * Block > Suspend > SetResult; on a tie the first wins and the conflict is reported.
   */
  private async gate(
    point: HookPoint,
    hooks: readonly RegisteredHook[],
    call: unknown,
    site: HookSite,
  ): Promise<GateDecision> {
    let best: GateDecision = ALLOW;
    let bestRank = 0;
    const snapshot = site.scope.snapshot();
    for (const hook of hooks) {
      const invoked = this.invoke(hook, call, snapshot, site, point, true);
      const { out } = invoked instanceof Promise ? await invoked : invoked;
      if (out === undefined) continue;
      if (!isHookResult(out)) continue;
      const kind = hookResultKind(out);
      if (kind !== 'block' && kind !== 'suspend' && kind !== 'setResult') this.assertAllowed(point, hook, out);
      const rank = GATE_RANK[kind as keyof typeof GATE_RANK];
      const by = `${hook.plugin}.${hook.method}`;
      if (rank === bestRank && best.kind !== 'allow') {
        this.events.emit({
          type: 'error',
          code: 'GateConflict',
          message: `Gates ${(best as { by: string }).by} and ${by} both decided '${kind}' at ${point}; the first (by priority) wins`,
          plugin: hook.plugin,
          point,
          sessionId: site.scope.state.sessionId,
        });
        continue;
      }
      if (rank < bestRank) continue;
      bestRank = rank;
      const r = out as HookResult & Record<string, unknown>;
      best =
        kind === 'block'
          ? { kind, reason: r.reason as string, by }
          : kind === 'suspend'
            ? { kind, ticket: r.ticket as SuspendTicket, by }
            : { kind: 'setResult', value: r.value, by };
    }
    return best;
  }

  /** All handlers see one frozen snapshot and run concurrently; conflicting commands fall back to re-runs. */
  private async concurrent(
    point: HookPoint,
    hooks: readonly RegisteredHook[],
    payload: unknown,
    site: HookSite,
  ): Promise<unknown[]> {
    const snapshot = site.scope.snapshot();
    // Every handler starts before any result is looked at; promises are awaited only if some handler returned one.
    let pending = false;
    const started = hooks.map((hook): PromiseSettledResult<Invocation | Promise<Invocation>> => {
      try {
        const value = this.invoke(hook, payload, snapshot, site, point, false);
        if (value instanceof Promise) pending = true;
        return { status: 'fulfilled', value };
      } catch (reason) {
        return { status: 'rejected', reason };
      }
    });
    const settled = pending
      ? await Promise.allSettled(
          started.map((s) => (s.status === 'fulfilled' ? Promise.resolve(s.value) : Promise.reject(s.reason))),
        )
      : (started as PromiseSettledResult<Invocation>[]);
    const failed = settled.find((s): s is PromiseRejectedResult => s.status === 'rejected');
    if (failed) throw failed.reason;
    const invocations = settled.map((s) => (s as PromiseFulfilledResult<Invocation>).value);
    const outs = invocations.map((c) => c.out);
    // Partition in registration order into one compatible batch; the rest run again.
    const batch: StateCommand[] = [];
    const taken = new Set<string>();
    const deferred: number[] = [];
    invocations.forEach((invocation, index) => {
      const command = commandOf(invocation.ctx);
      if (!command) return;
      const keys = exclusiveKeys(command);
      if (keys.some((key) => taken.has(key))) deferred.push(index);
      else {
        for (const key of keys) taken.add(key);
        batch.push(command);
      }
    });
    const phase: Phase = { point, pending: undefined };
    if (batch.length > 0) await this.state.submit(mergeCommands(batch), site, phase);
    for (const index of deferred) {
      const again = await this.invoke(hooks[index]!, payload, site.scope.snapshot(), site, point, false);
      outs[index] = again.out;
      const command = commandOf(again.ctx);
      if (command) await this.state.submit(command, site, phase);
    }
    if (phase.pending !== undefined) await this.state.execute(phase, site);
    return outs;
  }

  /** A pipeline handler's command can go stale when tool calls run concurrently: run it again once on fresh state. */
  private async commitWithRetry(
    hook: RegisteredHook,
    value: unknown,
    first: Invocation,
    site: HookSite,
    phase: Phase,
    point: HookPoint,
  ): Promise<Invocation> {
    try {
      await this.state.submit(commandOf(first.ctx)!, site, phase);
      return first;
    } catch (error) {
      if (!TrellisError.is(error, 'StaleState')) throw error;
      const again = await this.invoke(hook, value, site.scope.snapshot(), site, point, false);
      const command = commandOf(again.ctx);
      if (command) await this.state.submit(command, site, phase);
      return again;
    }
  }

  /** Runs one handler through the member invoker; errors name the plugin and the point. */
  private invoke(
    hook: RegisteredHook,
    value: unknown,
    snapshot: ContextSnapshot,
    site: HookSite,
    point: HookPoint,
    readOnly: boolean,
  ): Invocation | Promise<Invocation> {
    if (this.events.observed) return this.invokeObserved(hook, value, snapshot, site, point, readOnly);
    const spend = site.spend;
    const started = spend === undefined ? 0 : performance.now();
    let invoked: Invocation | Promise<Invocation>;
    try {
      invoked = invokeMember(hook, value, {
        scope: site.scope,
        snapshot,
        schema: site.schema,
        point,
        readOnly,
        signal: site.signal,
      });
    } catch (error) {
      spend?.addHook(hook.plugin, performance.now() - started);
      throw hookFailure(error, hook, point);
    }
    if (invoked instanceof Promise) {
      if (spend === undefined) {
        return invoked.catch((error: unknown) => {
          throw hookFailure(error, hook, point);
        });
      }
      // One reaction either way: the time is the plugin's whether the handler settles or throws.
      return invoked.then(
        (done) => {
          spend.addHook(hook.plugin, performance.now() - started);
          return done;
        },
        (error: unknown) => {
          spend.addHook(hook.plugin, performance.now() - started);
          throw hookFailure(error, hook, point);
        },
      );
    }
    spend?.addHook(hook.plugin, performance.now() - started);
    return invoked;
  }

  /** `invoke` with `hook.entered`/`hook.exited` events, when someone listens. */
  private async invokeObserved(
    hook: RegisteredHook,
    value: unknown,
    snapshot: ContextSnapshot,
    site: HookSite,
    point: HookPoint,
    readOnly: boolean,
  ): Promise<Invocation> {
    const sessionId = site.scope.state.sessionId;
    const started = performance.now();
    this.events.emit({ type: 'hook.entered', point, plugin: hook.plugin, sessionId });
    try {
      return await invokeMember(hook, value, {
        scope: site.scope,
        snapshot,
        schema: site.schema,
        point,
        readOnly,
        signal: site.signal,
      });
    } catch (error) {
      throw hookFailure(error, hook, point);
    } finally {
      const durationMs = performance.now() - started;
      site.spend?.addHook(hook.plugin, durationMs);
      this.events.emit({ type: 'hook.exited', point, plugin: hook.plugin, durationMs, sessionId });
    }
  }

  private assertAllowed(point: HookPoint, hook: RegisteredHook, result: HookResult): void {
    const kind = hookResultKind(result);
    const allows = HOOK_POINTS[point].allows as readonly string[];
    if (allows.includes(kind)) return;
    throw new TrellisError(
      'HookResultNotAllowed',
      `${hook.plugin}.${hook.method} returned ${kind}() at '${point}', which does not allow it (allowed: ${allows.length ? allows.map((a) => `${a}()`).join(', ') : 'a value or nothing'})`,
      {
        hint:
          kind === 'block'
            ? 'Block tool calls from tool.gate or tool.before_call, and messages from message.received'
            : kind === 'cancel'
              ? 'Cancel replies from message.sending'
              : 'Return a value, or nothing to keep the current one',
        details: { plugin: hook.plugin, point, result: kind },
      },
    );
  }
}

/** Whether a pipeline stopped with `block(...)` or `cancel(...)` rather than a value. */
export function isStop(value: unknown): value is HookResult & { readonly reason: string } {
  if (!isHookResult(value)) return false;
  const kind = hookResultKind(value);
  return kind === 'block' || kind === 'cancel';
}

/** A throw from a handler becomes a typed error naming the plugin and the point; a Trellis code is kept. */
export function hookFailure(error: unknown, hook: { plugin: string; method: string }, point: string): TrellisError {
  const where = `${hook.plugin}.${hook.method} at '${point}'`;
  if (TrellisError.is(error) && error.details['point'] !== undefined) return error;
  let message = describeError(error);
  const code = TrellisError.is(error) ? error.code : 'HookFailed';
  // Keep a wrapped error's hint as its hint (not only as text), without repeating it.
  const hint = TrellisError.is(error)
    ? error.hint
    : 'Fix the handler, or catch the error inside it: a throwing hook fails the turn';
  if (TrellisError.is(error) && hint && message.endsWith(`. ${hint}`)) message = message.slice(0, -(hint.length + 2));
  return new TrellisError(code, `${where}: ${message}`, {
    hint,
    kind: TrellisError.is(error) ? error.kind : 'user',
    retryable: TrellisError.is(error) ? error.retryable : false,
    details: { ...(TrellisError.is(error) ? error.details : {}), plugin: hook.plugin, point },
    cause: error,
  });
}
