import { TrellisError } from '../../errors/trellis-error.js';
import type { StateSchema } from '../../contract/state-schema.js';
import type { EmittedEffect, ScheduledAction, StateCommand, StateWrite } from '../../contract/state-command.js';
import { isKernelMember, type PluginMember } from '../../contract/plugin-member.js';
import { lookup, type ContextSnapshot } from './context-level.js';
import { NEVER_ABORTED } from './never-signal.js';
import type { HookContext, ToolContext } from '../../contract/plugin-context.js';

const NONE: readonly never[] = Object.freeze([]);

interface KernelAccess {
  command(ctx: MemberContext): StateCommand | undefined;
  bindCall(ctx: MemberContext, callId: string, tool: string, turnIndex: number, round: number, position: number): void;
  setSignal(ctx: MemberContext, signal: AbortSignal): void;
}

let kernelAccess!: KernelAccess;

/**
 * The cropped view of the context pool one member invocation gets, and the builder of
 * the state command it leaves behind. Reads see the snapshot taken when it started.
 *
 * Sealed: everything but the documented `HookContext`/`ToolContext` members is held in
 * `#private` fields, so no cast reaches the snapshot, the scope or the session state. The
 * kernel reads the built command through {@link commandOf}, which is not exported from
 * any public entry.
 */
export class MemberContext implements HookContext, ToolContext {
  readonly #member: PluginMember;
  readonly #snapshot: ContextSnapshot;
  readonly #schema: StateSchema;
  readonly #point: string;
  readonly #deps: Readonly<Record<string, unknown>>;
  readonly #readOnly: boolean;
  readonly #sessionId: string;
  #signal: AbortSignal;
  // A tool call's identity, in fields rather than a record: set once per call on the hot path.
  #callId: string | undefined;
  #tool = '';
  #turnIndex = 0;
  #round = 0;
  #position = -1;
  #idempotencyKey: string | undefined;
  #writes: StateWrite[] | undefined;
  #actions: ScheduledAction[] | undefined;
  #effects: EmittedEffect[] | undefined;

  constructor(
    member: PluginMember,
    snapshot: ContextSnapshot,
    schema: StateSchema,
    point: string,
    deps: Readonly<Record<string, unknown>>,
    readOnly: boolean,
    signal: AbortSignal | undefined,
    sessionId: string,
  ) {
    this.#member = member;
    this.#snapshot = snapshot;
    this.#schema = schema;
    this.#point = point;
    this.#deps = deps;
    this.#readOnly = readOnly;
    this.#signal = signal ?? NEVER_ABORTED;
    this.#sessionId = sessionId;
  }

  get plugin(): string {
    return this.#member.plugin;
  }

  get sessionId(): string {
    return this.#sessionId;
  }

  get point(): string {
    return this.#point;
  }

  get deps(): Readonly<Record<string, unknown>> {
    return this.#deps;
  }

  get signal(): AbortSignal {
    return this.#signal;
  }

  get callId(): string {
    return this.#callId ?? '';
  }

  get tool(): string {
    return this.#tool;
  }

  get turnIndex(): number {
    return this.#turnIndex;
  }

  /**
   * `<session>:<turn>:<round>:<position>` (a call outside a model turn: `<session>:<turn>:<call id>`),
   * built when a tool first reads it. Never the model's call id, which a provider makes anew
   * whenever it is asked again.
   */
  get idempotencyKey(): string {
    if (this.#callId === undefined) return '';
    return (this.#idempotencyKey ??=
      this.#position < 0
        ? `${this.#sessionId}:${this.#turnIndex}:${this.#callId}`
        : `${this.#sessionId}:${this.#turnIndex}:${this.#round}:${this.#position}`);
  }

  get<T = unknown>(key: string): T | undefined {
    // A declared key was resolved against this same snapshot when the member started (`deps`:
    // the value, or the key's default): the same answer, without the ownership checks and the
    // three-level lookup (a middleware reading its declared key on every call).
    const deps = this.#deps;
    if (Object.prototype.hasOwnProperty.call(deps, key)) return deps[key] as T | undefined;
    if (!this.#canRead(key)) {
      throw new TrellisError('ContextAccess', `${this.#who()} may not read '${key}'`, {
        hint: `Declare it with @Requires('${key}') on the member or the class, or read it through the plugin that owns it`,
        details: { key, plugin: this.plugin },
      });
    }
    const value = lookup(this.#snapshot, key);
    return (value === undefined ? this.#schema.stateKey(key)?.default : value) as T | undefined;
  }

  set(key: string, value: unknown): void {
    this.#write(key, value, undefined);
  }

  update<T = unknown>(key: string, fn: (previous: T | undefined) => T): void {
    this.#write(key, undefined, fn as (previous: unknown) => unknown);
  }

  promote(key: string): void {
    const entry = this.#writable(key);
    // A value set earlier in this same call is not in the snapshot yet: promote that one.
    let value = this.#snapshot.execution?.[key];
    for (const write of this.#writes ?? NONE) {
      if (write.key === key && write.level === 'execution')
        value = write.fn ? write.fn(value === undefined ? write.fallback : value) : write.value;
    }
    (this.#writes ??= []).push({ key, level: 'turn', exclusive: entry.merge === 'exclusive', value });
  }

  emit(effect: string, payload?: unknown): void {
    this.#assertWritable('emit an effect');
    (this.#effects ??= []).push({ type: effect, payload, by: this.#who() });
  }

  schedule(action: string, payload?: unknown): void {
    this.#assertWritable('schedule an action');
    (this.#actions ??= []).push({ type: action, payload, by: this.#who() });
  }

  /** Only what a plugin may see; keeps `console.log(ctx)` and JSON from listing internals. */
  toJSON(): Record<string, unknown> {
    return {
      plugin: this.plugin,
      sessionId: this.sessionId,
      point: this.point,
      ...(this.#callId !== undefined && { callId: this.callId, tool: this.tool }),
    };
  }

  static {
    kernelAccess = {
      command: (ctx) =>
        ctx.#writes === undefined && ctx.#actions === undefined && ctx.#effects === undefined
          ? undefined
          : {
              baseRevision: ctx.#snapshot.revision,
              writes: ctx.#writes ?? NONE,
              actions: ctx.#actions ?? NONE,
              effects: ctx.#effects ?? NONE,
            },
      bindCall: (ctx, callId, tool, turnIndex, round, position) => {
        ctx.#callId = callId;
        ctx.#tool = tool;
        ctx.#turnIndex = turnIndex;
        ctx.#round = round;
        ctx.#position = position;
      },
      setSignal: (ctx, signal) => {
        ctx.#signal = signal;
      },
    };
  }

  #write(key: string, value: unknown, fn: ((previous: unknown) => unknown) | undefined): void {
    const entry = this.#writable(key);
    const write: StateWrite = fn
      ? { key, level: entry.scope, exclusive: entry.merge === 'exclusive', fn, fallback: entry.default }
      : { key, level: entry.scope, exclusive: entry.merge === 'exclusive', value };
    (this.#writes ??= []).push(write);
  }

  #writable(key: string) {
    this.#assertWritable(`write '${key}'`);
    if (!this.#owns(key)) {
      throw new TrellisError(
        'ContextAccess',
        `${this.#who()} may not write '${key}': a plugin writes only its own keys ('${this.plugin}.*')`,
        {
          hint: `Ask the owner of '${key}' to expose an effect or action that changes it`,
          details: { key, plugin: this.plugin },
        },
      );
    }
    const entry = this.#schema.stateKey(key);
    if (!entry) {
      throw new TrellisError('UnknownStateKey', `${this.#who()} wrote '${key}', which is not a declared state key`, {
        hint: `Declare it on the plugin class with @StateKey('${key}', { scope, merge })`,
        details: { key },
      });
    }
    return entry;
  }

  #assertWritable(what: string): void {
    if (this.#readOnly) {
      throw new TrellisError('ContextAccess', `${this.#who()} tried to ${what}, but ${this.#point} handlers are pure`, {
        hint: 'Return a decision from the gate and make state changes in tool.before_call or tool.after_call',
      });
    }
  }

  #canRead(key: string): boolean {
    return this.#owns(key) || key.startsWith('trellis.') || this.#member.declared.has(key);
  }

  #owns(key: string): boolean {
    if (isKernelMember(this.#member)) return true;
    const plugin = this.#member.plugin;
    if (!(key.length > plugin.length && key.startsWith(plugin) && key.charCodeAt(plugin.length) === 46)) return false;
    // Plugin 'team' must not own the declared keys of plugin 'team.sub'.
    const owner = this.#schema.stateKey(key)?.owner;
    return owner === undefined || owner === plugin;
  }

  #who(): string {
    return `${this.#member.plugin}.${this.#member.method}`;
  }
}

/** The state command a member built, or `undefined` when it wrote, scheduled and emitted nothing. */
export function commandOf(ctx: MemberContext): StateCommand | undefined {
  return kernelAccess.command(ctx);
}

/**
 * Makes a member context a tool call's: its call id, tool, turn, and its place in the turn
 * (the round and its position in that round's response; -1 outside a model turn). The
 * idempotency key follows from the place, so it is the same for the same step across
 * retries, crashes and processes, however the model names the call.
 */
export function bindCall(
  ctx: MemberContext,
  callId: string,
  tool: string,
  turnIndex: number,
  round: number,
  position: number,
): void {
  kernelAccess.bindCall(ctx, callId, tool, turnIndex, round, position);
}

/** Replaces the signal a member sees (a middleware may narrow it, e.g. a timeout). */
export function setSignal(ctx: MemberContext, signal: AbortSignal): void {
  kernelAccess.setSignal(ctx, signal);
}
