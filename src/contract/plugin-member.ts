import type { DelegatingPayload } from './delegation.js';
import type { ToolCallInfo } from './hook-payloads.js';
import type { NormalizedKey } from './context-key.js';
import type { HookPoint } from './hook-points.js';
import type { ToolMiddleware } from './tool-middleware.js';
import type { JsonSchema } from './model-provider.js';
import type { FieldError } from './field-error.js';

/**
 * Checks a tool's arguments — an object, or JSON text as a model writes it — and returns
 * the value the tool receives: the DTO instance, or for a raw-schema tool the parsed
 * arguments unchanged. Built by `toolInputValidator` (`src/engine/validation/tool-input.ts`).
 */
export type ToolInputValidator = (
  args: unknown,
) => { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly errors: readonly FieldError[] };

const KERNEL_MEMBERS = new WeakSet<object>();

/**
 * Marks one of the kernel's own handlers (built-in actions), which may write `trellis.*` keys.
 * The mark is kept in a module-private WeakSet, not on the object: no property a plugin can
 * set (on the member or on `Object.prototype`) makes a member the kernel's, and ownership
 * never depends on a plugin's name.
 */
export function kernelMember<T extends object>(member: T): T {
  KERNEL_MEMBERS.add(member);
  return member;
}

/** Whether `member` is one the kernel marked with {@link kernelMember}. */
export function isKernelMember(member: object): boolean {
  return KERNEL_MEMBERS.has(member);
}

/** A bound method of an installed plugin, with what it may read. */
export interface PluginMember {
  /** The owning plugin's name (`trellis` for the kernel's own handlers). */
  readonly plugin: string;
  /** The method name, for error messages. */
  readonly method: string;
  /** Declared `@Requires` keys (member and class level), resolved before the member runs. */
  readonly requires: readonly NormalizedKey[];
  /** The same keys as a set, for the cropped-read check. */
  readonly declared: ReadonlySet<string>;
  readonly fn: (value: unknown, ctx: never) => unknown;
}

export interface RegisteredHook extends PluginMember {
  readonly point: HookPoint;
  readonly priority: number;
  /** Install sequence then declaration order: the tie-breaker after priority. */
  readonly order: number;
}

export interface RegisteredTransform extends PluginMember {
  readonly priority: number;
  readonly order: number;
}

export interface RegisteredTool extends PluginMember {
  readonly name: string;
  readonly description: string;
  /** The input DTO; absent for a tool declared with a raw `inputSchema`. */
  readonly input?: new () => object;
  /** Checks arguments (an object or JSON text) against the DTO or the raw schema. */
  readonly validateInput: ToolInputValidator;
  readonly output?: new () => object;
  readonly tags: readonly string[];
  readonly timeoutMs?: number;
  /** `@Tool({ maxResultChars })`: the model reads at most this much of a result. */
  readonly maxResultChars?: number;
  /**
   * What happens to a call of it that a crash cut off mid-run (`@Tool({ onCrash, idempotent })`):
   * `retry` runs it again with the same `ctx.idempotencyKey`; `ask` makes it a `retry`/`skip` decision.
   */
  readonly onCrash: 'retry' | 'ask';
  /** Middleware instances, outermost first: app-wide, plugin, install options, method. */
  readonly chain: readonly ToolMiddleware[];
  /** Names of the chain's classes, for `trellis plugins`. */
  readonly chainNames: readonly string[];
  readonly schema: JsonSchema;
  /**
   * Set on the kernel's delegation tools (an agent used as a tool, a handoff): what the
   * `agent.delegating` gate is asked, after `tool.gate` allowed the call.
   */
  readonly delegation?: (call: ToolCallInfo) => DelegatingPayload;
}

export interface KeyedHandler extends PluginMember {
  readonly key: string;
}

export interface StateKeyEntry {
  readonly key: string;
  readonly owner: string;
  readonly scope: 'session' | 'turn' | 'execution';
  readonly merge: 'exclusive' | 'commutative';
  readonly persistent: boolean;
  readonly retainOnUninstall: boolean;
  readonly default?: unknown;
}
