import { TrellisError } from '../../errors/trellis-error.js';
import type { ToolErrorInfo } from '../../contract/tool-result.js';
import type { TurnSpend } from '../../contract/turn-spend.js';
import type { Usage } from '../../contract/model-provider.js';
import { MemoryBudgetCounter, StoreBudgetCounter, type BudgetCounter } from './budget-counter.js';
import { canCountBudgets } from '../stores/budget-counts.js';

/** A limit over a fixed window: at most `max` per `windowMs` (windows start at multiples of it since the epoch). */
export interface BudgetWindow {
  readonly max: number;
  /** Whole milliseconds, from 1,000 (one second) to 2,678,400,000 (31 days). */
  readonly windowMs: number;
}

/**
 * A spending limit for one plugin or one owning team. Checked at the point of spend: before
 * each tool call of a matching plugin runs (after its gates, validation and context), since a
 * plugin spends through its tools (their time, and the model calls that read their results).
 *
 * @example
 * { owner: 'team-search', toolCallsPerMinute: 600, tokens: { max: 2_000_000, windowMs: 86_400_000 } }
 * { plugin: 'payments', msPerTurn: 5_000, cost: { max: 50, windowMs: 3_600_000 } }
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
   * All of its wall time within one turn, in milliseconds: its tool calls, its hooks and
   * transforms, and the model calls attributed to it (as `usage.byPlugin` attributes them).
   */
  readonly msPerTurn?: number;
  /**
   * Model tokens attributed to it within one turn (as `usage.byPlugin` attributes them: a round's
   * tokens to the plugins whose tool results it read): once spent, its next tool call is refused.
   */
  readonly tokensPerTurn?: number;
  /** Model tokens attributed to it over a window, across every session and worker sharing the counter. */
  readonly tokens?: BudgetWindow;
  /** What those tokens cost (`budgets.price`, e.g. the billing plugin's prices) over a window, shared like `tokens`. */
  readonly cost?: BudgetWindow;
}

/** What a model call costs, in the unit `cost` limits are written in (e.g. credits); see `billingPrice` in the billing plugin. */
export type BudgetPrice = (usage: Usage, model: string) => number;

/** `Trellis.create({ budgets })`. */
export interface BudgetSettings {
  readonly limits: readonly BudgetLimit[];
  /**
   * Where windowed counts (calls per minute, `tokens`, `cost`) live. Default: the app's store
   * when it keeps budget counts (`SqliteStore`: every process on the file shares them), else
   * this process. Use a `RedisBudgetCounter` (or a `PostgresBudgetCounter`) for workers on
   * several machines.
   */
  readonly counter?: BudgetCounter;
  /** The price of a model call, needed by `cost` limits. */
  readonly price?: BudgetPrice;
  /** The clock of the windows (default `Date.now`); tests pin it so no window ends mid-test. */
  readonly now?: () => number;
}

/** Which limit a refused call went over. */
export type BudgetLimitKind =
  'toolCallsPerMinute' | 'toolMsPerTurn' | 'msPerTurn' | 'tokensPerTurn' | 'tokens' | 'cost';

/** What a refused call reports, on the event stream and to the model. */
export interface BudgetRefusal {
  readonly budget: string;
  readonly plugin: string;
  readonly owner?: string;
  readonly limit: BudgetLimitKind;
  readonly max: number;
  /** `this turn`, `1 minute`, or the window of a `tokens` / `cost` limit (`1 hour`, `24 hours`). */
  readonly window: string;
  /** What was spent when the call was refused (the count in the window, or in the turn). */
  readonly spent: number;
}

interface CheckedLimit extends BudgetLimit {
  readonly name: string;
  /** `plugin:<name>` or `owner:<name>`. */
  readonly target: string;
}

const MINUTE = 60_000;
const MAX_WINDOW_MS = 31 * 86_400_000;

/** The app's budgets, checked once; one per app. */
export class BudgetGuard {
  readonly #limits: readonly CheckedLimit[];
  readonly #counter: BudgetCounter;
  readonly #price: BudgetPrice | undefined;
  readonly #now: () => number;
  /** Whether any limit counts model calls over a window (`tokens`, `cost`): the turn reports its model calls then. */
  readonly countsModel: boolean;

  /** `store`: the app's session store, whose budget counts are used when no counter is given. */
  constructor(settings: BudgetSettings, store?: object) {
    if (typeof settings !== 'object' || settings === null || !Array.isArray(settings.limits)) {
      throw new TrellisError('InvalidOptions', 'budgets must be { limits: [...] }', {
        hint: "Pass budgets: { limits: [{ owner: 'team-search', toolCallsPerMinute: 600 }] }",
      });
    }
    this.#limits = settings.limits.map(checkLimit);
    if (settings.price !== undefined && typeof settings.price !== 'function')
      throw new TrellisError('InvalidOptions', 'budgets.price must be a function (usage, model) => cost', {
        hint: 'Use billingPrice(billingConfig) from the billing plugin',
      });
    const costed = this.#limits.find((l) => l.cost !== undefined);
    if (costed && settings.price === undefined) {
      throw new TrellisError(
        'InvalidOptions',
        `Budget '${costed.name}' limits cost, but budgets.price is not set: nothing says what a model call costs`,
        {
          hint: 'Pass budgets: { price: billingPrice(billingConfig), limits } (billingPrice is exported by the billing plugin), or a (usage, model) => number of your own',
        },
      );
    }
    this.#price = settings.price;
    this.#counter =
      settings.counter ??
      (store !== undefined && canCountBudgets(store) ? new StoreBudgetCounter(store) : new MemoryBudgetCounter());
    this.#now = settings.now ?? Date.now;
    this.countsModel = this.#limits.some((l) => l.tokens !== undefined || l.cost !== undefined);
  }

  /** Whether any limit applies to this plugin; calls of other plugins pay nothing. */
  applies(plugin: string, owner: string | undefined): boolean {
    return this.#limits.some((l) => matches(l, plugin, owner));
  }

  /**
   * Checks a call of `plugin` against each matching limit: what its turn spent (`spend`), the
   * counts of its windows, then counts the call towards its per-minute limits. Returns the first
   * limit it goes over, or undefined.
   */
  async admit(
    plugin: string,
    owner: string | undefined,
    spend: TurnSpend,
    ownerOf: (plugin: string) => string | undefined,
    now = this.#now(),
  ): Promise<BudgetRefusal | undefined> {
    const refuse = (
      limit: CheckedLimit,
      kind: BudgetLimitKind,
      max: number,
      window: string,
      spent: number,
    ): BudgetRefusal => ({
      budget: limit.name,
      plugin,
      ...(owner !== undefined && { owner }),
      limit: kind,
      max,
      window,
      spent,
    });
    const mine = this.#limits.filter((l) => matches(l, plugin, owner));
    for (const limit of mine) {
      const inTurn = (of: (p: string) => number) => turnSum(limit, spend, ownerOf, of);
      if (limit.toolMsPerTurn !== undefined) {
        const spent = inTurn((p) => spend.toolMs[p] ?? 0);
        if (spent >= limit.toolMsPerTurn)
          return refuse(limit, 'toolMsPerTurn', limit.toolMsPerTurn, 'this turn', spent);
      }
      if (limit.msPerTurn !== undefined) {
        const spent = inTurn((p) => spend.wallMs(p));
        if (spent >= limit.msPerTurn) return refuse(limit, 'msPerTurn', limit.msPerTurn, 'this turn', spent);
      }
      if (limit.tokensPerTurn !== undefined) {
        const spent = inTurn((p) => spend.tokens[p] ?? 0);
        if (spent >= limit.tokensPerTurn)
          return refuse(limit, 'tokensPerTurn', limit.tokensPerTurn, 'this turn', spent);
      }
    }
    for (const limit of mine) {
      for (const kind of ['tokens', 'cost'] as const) {
        const window = limit[kind];
        if (window === undefined) continue;
        const spent = await this.#counter.add(windowKey(kind, limit, window.windowMs), 0, window.windowMs, now);
        if (spent >= window.max) return refuse(limit, kind, window.max, windowName(window.windowMs), spent);
      }
    }
    for (const limit of mine) {
      if (limit.toolCallsPerMinute === undefined) continue;
      const count = await this.#counter.add(windowKey('calls', limit, MINUTE), 1, MINUTE, now);
      if (count > limit.toolCallsPerMinute)
        return refuse(limit, 'toolCallsPerMinute', limit.toolCallsPerMinute, '1 minute', count);
    }
    return undefined;
  }

  /**
   * Counts one model call towards the `tokens` and `cost` windows of the plugins that caused it
   * (`causes`: one entry per call of theirs in the round before), shared evenly.
   */
  async spentModel(
    causes: readonly string[],
    ownerOf: (plugin: string) => string | undefined,
    usage: Usage,
    model: string,
    now = this.#now(),
  ): Promise<void> {
    if (causes.length === 0 || usage.totalTokens <= 0) return;
    const adds: Promise<number>[] = [];
    let price: number | undefined;
    for (const limit of this.#limits) {
      if (limit.tokens === undefined && limit.cost === undefined) continue;
      const share = causes.filter((p) => matches(limit, p, ownerOf(p))).length / causes.length;
      if (share === 0) continue;
      if (limit.tokens !== undefined)
        adds.push(
          this.#counter.add(
            windowKey('tokens', limit, limit.tokens.windowMs),
            usage.totalTokens * share,
            limit.tokens.windowMs,
            now,
          ),
        );
      if (limit.cost !== undefined) {
        price ??= checkedPrice(this.#price!(usage, model), model);
        if (price > 0)
          adds.push(
            this.#counter.add(windowKey('cost', limit, limit.cost.windowMs), price * share, limit.cost.windowMs, now),
          );
      }
    }
    await Promise.all(adds);
  }
}

/** The result the model reads for a refused call. */
export function budgetError(refusal: BudgetRefusal): ToolErrorInfo {
  const who =
    refusal.owner !== undefined ? `plugin '${refusal.plugin}' (owner ${refusal.owner})` : `plugin '${refusal.plugin}'`;
  const perTurn = refusal.window === 'this turn';
  const limit = {
    toolCallsPerMinute: `${refusal.max} tool calls per minute`,
    toolMsPerTurn: `${refusal.max} ms of tool time per turn`,
    msPerTurn: `${refusal.max} ms per turn of its tools, hooks, transforms and the model calls reading its results`,
    tokensPerTurn: `${refusal.max} model tokens per turn caused by its tools' results`,
    tokens: `${refusal.max} model tokens caused by its tools' results per ${refusal.window}`,
    cost: `${refusal.max} of cost (model tokens caused by its tools' results, at the app's prices) per ${refusal.window}`,
  }[refusal.limit];
  return {
    code: 'BudgetExceeded',
    message: `Budget '${refusal.budget}' of ${who} is spent: at most ${limit} (window: ${refusal.window}). The call did not run; do not retry it ${perTurn ? 'in this turn' : 'before the window ends'}`,
    retryable: !perTurn,
  };
}

/** What a limit's plugin (or every plugin of its owner) spent in the turn, by `of`. */
function turnSum(
  limit: CheckedLimit,
  spend: TurnSpend,
  ownerOf: (plugin: string) => string | undefined,
  of: (plugin: string) => number,
): number {
  if (limit.plugin !== undefined) return of(limit.plugin);
  let sum = 0;
  for (const plugin of spend.plugins()) if (ownerOf(plugin) === limit.owner) sum += of(plugin);
  return sum;
}

function windowKey(kind: 'calls' | 'tokens' | 'cost', limit: CheckedLimit, windowMs: number): string {
  return kind === 'calls' ? `calls:${limit.target}` : `${kind}:${windowMs}:${limit.target}`;
}

/** `1 minute`, `90 seconds`, `24 hours`, `7 days`. */
export function windowName(ms: number): string {
  const unit = (n: number, name: string) => `${n} ${name}${n === 1 ? '' : 's'}`;
  if (ms % 86_400_000 === 0) return unit(ms / 86_400_000, 'day');
  if (ms % 3_600_000 === 0) return unit(ms / 3_600_000, 'hour');
  if (ms % 60_000 === 0) return unit(ms / 60_000, 'minute');
  if (ms % 1000 === 0) return unit(ms / 1000, 'second');
  return `${ms} ms`;
}

function checkedPrice(price: unknown, model: string): number {
  if (typeof price === 'number' && Number.isFinite(price) && price >= 0) return price;
  throw new TrellisError(
    'InvalidOptions',
    `budgets.price gave ${String(price)} for a call of ${model}: a cost must be a finite number of 0 or more`,
    { hint: 'Fix the price function (billingPrice(config) from the billing plugin gives credits)' },
  );
}

function matches(limit: CheckedLimit, plugin: string, owner: string | undefined): boolean {
  return limit.plugin !== undefined ? limit.plugin === plugin : owner !== undefined && limit.owner === owner;
}

/** The limits written as one positive whole number. */
const COUNTS = ['toolCallsPerMinute', 'toolMsPerTurn', 'msPerTurn', 'tokensPerTurn'] as const;

function checkLimit(limit: BudgetLimit, i: number): CheckedLimit {
  const where = `budgets.limits[${i}]`;
  const bad = (why: string) =>
    new TrellisError('InvalidOptions', `${where} ${why}`, {
      hint: "Write a limit as { owner: 'team-search', toolCallsPerMinute: 600 }, { plugin: 'payments', msPerTurn: 5000 } or { owner: 'team-search', tokens: { max: 2000000, windowMs: 86400000 } }",
      details: { limit },
    });
  if (typeof limit !== 'object' || limit === null) throw bad('must be an object');
  if ((limit.plugin === undefined) === (limit.owner === undefined)) throw bad('needs exactly one of plugin or owner');
  for (const field of COUNTS) {
    const v = limit[field];
    if (v !== undefined && !(Number.isSafeInteger(v) && v > 0))
      throw bad(`${field} must be a positive whole number, got ${String(v)}`);
  }
  for (const field of ['tokens', 'cost'] as const) {
    const w = limit[field];
    if (w === undefined) continue;
    if (typeof w !== 'object' || w === null) throw bad(`${field} must be { max, windowMs }`);
    if (
      !(typeof w.max === 'number' && Number.isFinite(w.max) && w.max > 0) ||
      (field === 'tokens' && !Number.isSafeInteger(w.max))
    )
      throw bad(`${field}.max must be a positive ${field === 'tokens' ? 'whole ' : ''}number, got ${String(w.max)}`);
    if (!(Number.isSafeInteger(w.windowMs) && w.windowMs >= 1000 && w.windowMs <= MAX_WINDOW_MS))
      throw bad(
        `${field}.windowMs must be whole milliseconds from 1,000 to ${MAX_WINDOW_MS.toLocaleString('en')} (31 days), got ${String(w.windowMs)}`,
      );
  }
  if (COUNTS.every((f) => limit[f] === undefined) && limit.tokens === undefined && limit.cost === undefined) {
    throw bad('limits nothing: give toolCallsPerMinute, toolMsPerTurn, msPerTurn, tokensPerTurn, tokens or cost');
  }
  const target = limit.plugin !== undefined ? `plugin:${limit.plugin}` : `owner:${limit.owner}`;
  return { ...limit, name: limit.name ?? (limit.plugin ?? limit.owner)!, target };
}
