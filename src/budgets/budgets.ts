import { TrellisError } from '../errors/trellis-error.js';
import type { ToolErrorInfo } from '../contract/tool-result.js';
import { MemoryBudgetCounter, type BudgetCounter } from './budget-counter.js';

/**
 * A spending limit for one plugin or one owning team. Checked at the point of spend: before
 * each tool call of a matching plugin runs (after its gates, validation and context).
 *
 * @example
 * { owner: 'team-search', toolCallsPerMinute: 600 }, { plugin: 'payments', toolMsPerTurn: 5_000 }
 */
export interface BudgetLimit {
  /** Named in `BudgetExceeded`. Default: the plugin or owner. */
  readonly name?: string;
  /** The plugin it limits (exactly one of `plugin` and `owner`). */
  readonly plugin?: string;
  /** The owning team it limits: every plugin with `@Plugin({ owner })` equal to it, counted together. */
  readonly owner?: string;
  /** Tool calls per minute (fixed one-minute windows), across every session, and every worker with a shared counter. */
  readonly toolCallsPerMinute?: number;
  /** Wall time of its tool calls within one turn, in milliseconds: a call that would start past it is refused. */
  readonly toolMsPerTurn?: number;
  /**
   * Model tokens attributed to it within one turn (as `usage.byPlugin` attributes them: a round's
   * tokens to the plugins whose tool results it read): once spent, its next tool call is refused.
   */
  readonly tokensPerTurn?: number;
}

/** `Trellis.create({ budgets })`. */
export interface BudgetSettings {
  readonly limits: readonly BudgetLimit[];
  /** Where per-minute counts live; default in this process. Use a `RedisBudgetCounter` for several workers. */
  readonly counter?: BudgetCounter;
  /** The clock of the per-minute windows (default `Date.now`); tests pin it so no window ends mid-test. */
  readonly now?: () => number;
}

/** What a refused call reports, on the event stream and to the model. */
export interface BudgetRefusal {
  readonly budget: string;
  readonly plugin: string;
  readonly owner?: string;
  readonly limit: 'toolCallsPerMinute' | 'toolMsPerTurn' | 'tokensPerTurn';
  readonly max: number;
  readonly window: string;
}

interface CheckedLimit extends BudgetLimit {
  readonly name: string;
  readonly key: string;
}

/** The app's budgets, checked; one per app. Per-turn time is kept per turn (`turnKey`) while it runs here. */
export class BudgetGuard {
  readonly #limits: readonly CheckedLimit[];
  readonly #counter: BudgetCounter;
  readonly #now: () => number;
  /** Tool time spent per turn and limit; a turn's entry goes when the turn ends (`endTurn`). */
  readonly #turnMs = new Map<string, Map<string, number>>();

  constructor(settings: BudgetSettings) {
    this.#limits = settings.limits.map(checkLimit);
    this.#counter = settings.counter ?? new MemoryBudgetCounter();
    this.#now = settings.now ?? Date.now;
  }

  /** Whether any limit applies to this plugin; calls of other plugins pay nothing. */
  applies(plugin: string, owner: string | undefined): boolean {
    return this.#limits.some((l) => matches(l, plugin, owner));
  }

  /** Counts the call against each matching limit; the first limit it goes over, or undefined. */
  async admit(plugin: string, owner: string | undefined, turnKey: string, now = this.#now()): Promise<BudgetRefusal | undefined> {
    for (const limit of this.#limits) {
      if (!matches(limit, plugin, owner)) continue;
      if (limit.toolMsPerTurn !== undefined && (this.#turnMs.get(turnKey)?.get(limit.key) ?? 0) >= limit.toolMsPerTurn) {
        return { budget: limit.name, plugin, ...(owner !== undefined && { owner }), limit: 'toolMsPerTurn', max: limit.toolMsPerTurn, window: 'this turn' };
      }
      if (limit.tokensPerTurn !== undefined && (this.#turnMs.get(turnKey)?.get(`tokens:${limit.key}`) ?? 0) >= limit.tokensPerTurn) {
        return { budget: limit.name, plugin, ...(owner !== undefined && { owner }), limit: 'tokensPerTurn', max: limit.tokensPerTurn, window: 'this turn' };
      }
    }
    for (const limit of this.#limits) {
      if (!matches(limit, plugin, owner) || limit.toolCallsPerMinute === undefined) continue;
      const count = await this.#counter.increment(`calls:${limit.key}`, 60_000, now);
      if (count > limit.toolCallsPerMinute) return { budget: limit.name, plugin, ...(owner !== undefined && { owner }), limit: 'toolCallsPerMinute', max: limit.toolCallsPerMinute, window: '1 minute' };
    }
    return undefined;
  }

  /** Adds a finished call's time to the turn's per-turn limits. */
  spent(plugin: string, owner: string | undefined, turnKey: string, ms: number): void {
    for (const limit of this.#limits) {
      if (limit.toolMsPerTurn === undefined || !matches(limit, plugin, owner)) continue;
      const turn = this.#turnMs.get(turnKey) ?? new Map<string, number>();
      turn.set(limit.key, (turn.get(limit.key) ?? 0) + ms);
      this.#turnMs.set(turnKey, turn);
    }
  }

  /** Adds a model call's tokens to the per-turn token limits of the plugins that caused it, shared evenly. */
  spentTokens(turnKey: string, causes: readonly { readonly plugin: string; readonly owner?: string }[], tokens: number): void {
    if (causes.length === 0 || tokens <= 0) return;
    const share = tokens / causes.length;
    for (const cause of causes) {
      for (const limit of this.#limits) {
        if (limit.tokensPerTurn === undefined || !matches(limit, cause.plugin, cause.owner)) continue;
        const turn = this.#turnMs.get(turnKey) ?? new Map<string, number>();
        turn.set(`tokens:${limit.key}`, (turn.get(`tokens:${limit.key}`) ?? 0) + share);
        this.#turnMs.set(turnKey, turn);
      }
    }
  }

  /** Whether any limit counts tokens: the turn reports its model calls' spend only then. */
  get countsTokens(): boolean {
    return this.#limits.some((l) => l.tokensPerTurn !== undefined);
  }

  endTurn(turnKey: string): void {
    this.#turnMs.delete(turnKey);
  }
}

/** The result the model reads for a refused call. */
export function budgetError(refusal: BudgetRefusal): ToolErrorInfo {
  const who = refusal.owner !== undefined ? `plugin '${refusal.plugin}' (owner ${refusal.owner})` : `plugin '${refusal.plugin}'`;
  const limit = refusal.limit === 'toolCallsPerMinute' ? `${refusal.max} tool calls per minute` : refusal.limit === 'toolMsPerTurn' ? `${refusal.max} ms of tool time per turn` : `${refusal.max} model tokens per turn caused by its tools' results`;
  return { code: 'BudgetExceeded', message: `Budget '${refusal.budget}' of ${who} is spent: at most ${limit} (window: ${refusal.window}). The call did not run; do not retry it ${refusal.window === 'this turn' ? 'in this turn' : 'before the window ends'}`, retryable: refusal.limit === 'toolCallsPerMinute' };
}

function matches(limit: CheckedLimit, plugin: string, owner: string | undefined): boolean {
  return limit.plugin !== undefined ? limit.plugin === plugin : owner !== undefined && limit.owner === owner;
}

function checkLimit(limit: BudgetLimit, i: number): CheckedLimit {
  const where = `budgets.limits[${i}]`;
  const bad = (why: string) => new TrellisError('InvalidOptions', `${where} ${why}`, { hint: "Write a limit as { owner: 'team-search', toolCallsPerMinute: 600 } or { plugin: 'payments', toolMsPerTurn: 5000 }", details: { limit } });
  if (typeof limit !== 'object' || limit === null) throw bad('must be an object');
  if ((limit.plugin === undefined) === (limit.owner === undefined)) throw bad('needs exactly one of plugin or owner');
  for (const field of ['toolCallsPerMinute', 'toolMsPerTurn', 'tokensPerTurn'] as const) {
    const v = limit[field];
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0)) throw bad(`${field} must be a positive whole number, got ${String(v)}`);
  }
  if (limit.toolCallsPerMinute === undefined && limit.toolMsPerTurn === undefined && limit.tokensPerTurn === undefined) throw bad('limits nothing: give toolCallsPerMinute, toolMsPerTurn or tokensPerTurn');
  const target = limit.plugin !== undefined ? `plugin:${limit.plugin}` : `owner:${limit.owner}`;
  return { ...limit, name: limit.name ?? (limit.plugin ?? limit.owner)!, key: target };
}
