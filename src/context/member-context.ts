import { TrellisError } from '../errors/trellis-error.js';
import type { StateSchema } from '../state/state-schema.js';
import type { EmittedEffect, ScheduledAction, StateCommand, StateWrite } from '../state/state-command.js';
import type { PluginMember } from '../plugin/plugin-member.js';
import { lookup, type ContextScope, type ContextSnapshot } from './context-scope.js';
import type { HookContext, ToolContext } from './plugin-context.js';

const NONE: readonly never[] = Object.freeze([]) as readonly never[];
export const KERNEL = 'trellis';

/**
 * The cropped view of the context pool one member invocation gets, and the builder of
 * the state command it leaves behind. Reads see the snapshot taken when it started.
 */
export class MemberContext implements HookContext, ToolContext {
  readonly plugin: string;
  private writes: StateWrite[] | undefined;
  private actions: ScheduledAction[] | undefined;
  private effects: EmittedEffect[] | undefined;
  // Tool calls fill these in; hooks leave the defaults.
  callId = '';
  tool = '';
  turnIndex = 0;
  signal: AbortSignal = NEVER_ABORTED;

  constructor(
    private readonly member: PluginMember,
    readonly snapshot: ContextSnapshot,
    readonly scope: ContextScope,
    private readonly schema: StateSchema,
    readonly point: string,
    readonly deps: Readonly<Record<string, unknown>>,
    private readonly readOnly = false,
  ) {
    this.plugin = member.plugin;
  }

  get sessionId(): string {
    return this.scope.state.sessionId;
  }

  get<T = unknown>(key: string): T | undefined {
    if (!this.canRead(key)) {
      throw new TrellisError('ContextAccess', `${this.who()} may not read '${key}'`, {
        hint: `Declare it with @Requires('${key}') on the member or the class, or read it through the plugin that owns it`,
        details: { key, plugin: this.plugin },
      });
    }
    const value = lookup(this.snapshot, key);
    return (value === undefined ? this.schema.stateKey(key)?.default : value) as T | undefined;
  }

  set(key: string, value: unknown): void {
    this.write(key, value, undefined);
  }

  update<T = unknown>(key: string, fn: (previous: T | undefined) => T): void {
    this.write(key, undefined, fn as (previous: unknown) => unknown);
  }

  promote(key: string): void {
    const entry = this.writable(key);
    // A value set earlier in this same call is not in the snapshot yet: promote that one.
    let value = this.snapshot.execution?.[key];
    for (const write of this.writes ?? NONE) {
      if (write.key === key && write.level === 'execution') value = write.fn ? write.fn(value === undefined ? write.fallback : value) : write.value;
    }
    (this.writes ??= []).push({ key, level: 'turn', exclusive: entry.merge === 'exclusive', value });
  }

  emit(effect: string, payload?: unknown): void {
    this.assertWritable('emit an effect');
    (this.effects ??= []).push({ type: effect, payload, by: this.who() });
  }

  schedule(action: string, payload?: unknown): void {
    this.assertWritable('schedule an action');
    (this.actions ??= []).push({ type: action, payload, by: this.who() });
  }

  /** The command this invocation built; empty when it wrote nothing. */
  command(): StateCommand {
    return { baseRevision: this.snapshot.revision, writes: this.writes ?? NONE, actions: this.actions ?? NONE, effects: this.effects ?? NONE };
  }

  get dirty(): boolean {
    return this.writes !== undefined || this.actions !== undefined || this.effects !== undefined;
  }

  private write(key: string, value: unknown, fn: ((previous: unknown) => unknown) | undefined): void {
    const entry = this.writable(key);
    const write: StateWrite = fn
      ? { key, level: entry.scope, exclusive: entry.merge === 'exclusive', fn, fallback: entry.default }
      : { key, level: entry.scope, exclusive: entry.merge === 'exclusive', value };
    (this.writes ??= []).push(write);
  }

  private writable(key: string) {
    this.assertWritable(`write '${key}'`);
    if (!this.owns(key)) {
      throw new TrellisError('ContextAccess', `${this.who()} may not write '${key}': a plugin writes only its own keys ('${this.plugin}.*')`, {
        hint: `Ask the owner of '${key}' to expose an effect or action that changes it`,
        details: { key, plugin: this.plugin },
      });
    }
    const entry = this.schema.stateKey(key);
    if (!entry) {
      throw new TrellisError('UnknownStateKey', `${this.who()} wrote '${key}', which is not a declared state key`, {
        hint: `Declare it on the plugin class with @StateKey('${key}', { scope, merge })`,
        details: { key },
      });
    }
    return entry;
  }

  private assertWritable(what: string): void {
    if (this.readOnly) {
      throw new TrellisError('ContextAccess', `${this.who()} tried to ${what}, but ${this.point} handlers are pure`, {
        hint: 'Return a decision from the gate and make state changes in tool.before_call or tool.after_call',
      });
    }
  }

  private canRead(key: string): boolean {
    return this.owns(key) || key.startsWith('trellis.') || this.member.declared.has(key);
  }

  private owns(key: string): boolean {
    if (this.plugin === KERNEL) return true;
    if (!(key.length > this.plugin.length && key.startsWith(this.plugin) && key.charCodeAt(this.plugin.length) === 46)) return false;
    // Plugin 'team' must not own the declared keys of plugin 'team.sub'.
    const owner = this.schema.stateKey(key)?.owner;
    return owner === undefined || owner === this.plugin;
  }

  private who(): string {
    return `${this.plugin}.${this.member.method}`;
  }
}

const NEVER_ABORTED = new AbortController().signal;
