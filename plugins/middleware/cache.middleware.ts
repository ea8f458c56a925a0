import { IsInt, IsNumber, IsOptional, IsPositive } from 'class-validator';
import {
  inject,
  injectable,
  optional,
  MIDDLEWARE_OPTIONS,
  type NextToolHandler,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from 'trellis/plugin';
import { CLOCK, type Clock } from './clock.js';

/** Options of {@link CacheMiddleware}. */
export class CacheOptions {
  /** How long a result stays fresh, in ms. Required, > 0. */
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  ttlMs!: number;

  /** Entries kept; the oldest is evicted past it. Default 1000. */
  @IsOptional()
  @IsInt()
  @IsPositive()
  maxEntries = 1000;
}

interface Entry {
  readonly result: ToolResult;
  readonly expiresAt: number;
}

/**
 * Memoizes successful results of pure, read-only tools. The key is the tool name plus the
 * canonical JSON of its arguments (object keys sorted at every depth), so `{a,b}` and
 * `{b,a}` share an entry. Failures are never cached; an expired entry is recomputed; past
 * `maxEntries` the oldest entry goes. Time comes from the {@link CLOCK} binding, else `Date.now`.
 *
 * Caching is opt-in per tool: declare it on the tool method, not on the plugin or app,
 * since only the tool's author knows it has no side effects. Entries are shared by every
 * session and caller of that tool, so the arguments must say everything the result
 * depends on (a tool that reads the user from context must not be cached).
 *
 * @example
 * @Tool({ name: 'geo.lookup', description: '…', input: GeoQuery })
 * @Middleware(CacheMiddleware, { ttlMs: 60_000 })
 * lookup(input: GeoQuery) { … }
 */
@injectable()
export class CacheMiddleware implements ToolMiddleware {
  static readonly optionsType = CacheOptions;

  private readonly ttlMs: number;
  private readonly maxEntries: number;
  private readonly entries = new Map<string, Entry>();

  constructor(
    @inject(MIDDLEWARE_OPTIONS) options: CacheOptions,
    @inject(CLOCK) @optional() private readonly now: Clock = Date.now,
  ) {
    this.ttlMs = options.ttlMs;
    this.maxEntries = options.maxEntries ?? new CacheOptions().maxEntries;
  }

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    const key = cacheKey(call);
    // Arguments that cannot be serialized (a bigint, a cycle) are simply not cached.
    if (key === undefined) return next();
    const entry = this.entries.get(key);
    if (entry && entry.expiresAt > this.now()) return entry.result;
    if (entry) this.entries.delete(key);

    const result = await next();
    if (result.ok) this.store(key, result);
    return result;
  }

  private store(key: string, result: ToolResult): void {
    this.entries.delete(key);
    while (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next().value as string;
      this.entries.delete(oldest);
    }
    this.entries.set(key, { result, expiresAt: this.now() + this.ttlMs });
  }
}

function cacheKey(call: ToolInvocation): string | undefined {
  try {
    return `${call.tool}\u0000${JSON.stringify(canonical(call.args))}`;
  } catch {
    return undefined;
  }
}

/** A copy of a JSON-able value with object keys sorted at every depth. */
function canonical(value: unknown): unknown {
  if (typeof value !== 'object' || value === null) return value;
  const json = (value as { toJSON?: () => unknown }).toJSON;
  if (typeof json === 'function') return canonical(json.call(value));
  if (Array.isArray(value)) return value.map(canonical);
  const out: Record<string, unknown> = {};
  for (const name of Object.keys(value).sort()) out[name] = canonical((value as Record<string, unknown>)[name]);
  return out;
}
