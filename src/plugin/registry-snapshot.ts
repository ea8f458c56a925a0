import { HOOK_POINT_NAMES, type HookPoint } from '../hooks/hook-points.js';
import { BUILT_IN_ACTION_HANDLERS } from '../state/built-in-actions.js';
import { KERNEL_STATE_KEYS } from '../state/kernel-keys.js';
import type { StateSchema } from '../state/state-schema.js';
import type { InstalledPlugin } from './installed-plugin.js';
import type { KeyedHandler, RegisteredHook, RegisteredTool, RegisteredTransform, StateKeyEntry } from './plugin-member.js';

const byPriority = (a: { priority: number; order: number }, b: { priority: number; order: number }) => a.priority - b.priority || a.order - b.order;

/**
 * The set of installed plugins at one moment. Install, uninstall and reload build a new
 * snapshot and swap it in one assignment, so nobody ever sees both versions of a plugin
 * or neither; a running turn keeps the snapshot it started with.
 */
export class RegistrySnapshot implements StateSchema {
  readonly byName: ReadonlyMap<string, InstalledPlugin>;
  readonly stateKeys = new Map<string, StateKeyEntry>();
  readonly effects = new Map<string, KeyedHandler[]>();
  readonly actions = new Map<string, KeyedHandler>();
  readonly tools = new Map<string, RegisteredTool>();
  private readonly views = new Map<string, ActiveView>();

  constructor(readonly plugins: readonly InstalledPlugin[]) {
    this.byName = new Map(plugins.map((p) => [p.definition.name, p]));
    for (const key of KERNEL_STATE_KEYS) this.stateKeys.set(key.key, key);
    for (const handler of BUILT_IN_ACTION_HANDLERS) this.actions.set(handler.key, handler);
    for (const plugin of plugins) {
      for (const key of plugin.stateKeys) this.stateKeys.set(key.key, key);
      for (const handler of plugin.actions) this.actions.set(handler.key, handler);
      for (const handler of plugin.effects) {
        const list = this.effects.get(handler.key) ?? [];
        list.push(handler);
        this.effects.set(handler.key, list);
      }
      for (const tool of plugin.tools) this.tools.set(tool.name, tool);
    }
  }

  stateKey(key: string): StateKeyEntry | undefined {
    return this.stateKeys.get(key);
  }

  effectHandlers(effect: string): readonly KeyedHandler[] | undefined {
    return this.effects.get(effect);
  }

  actionHandler(action: string): KeyedHandler | undefined {
    return this.actions.get(action);
  }

  /** The behavioural parts an agent sees: enabled plugins, filtered by its `plugins` list (empty: all). Cached. */
  view(active: readonly string[] = []): ActiveView {
    const cacheKey = active.join('\u0000');
    let view = this.views.get(cacheKey);
    if (!view) {
      const wanted = new Set(active);
      const missing = active.filter((name) => !this.byName.has(name));
      view = new ActiveView(this.plugins.filter((p) => p.enabled && (wanted.size === 0 || wanted.has(p.definition.name))), missing);
      this.views.set(cacheKey, view);
    }
    return view;
  }
}

/** Hooks by point (sorted by priority, then install order), tools and transforms of the active plugins. */
export class ActiveView {
  readonly hooks: Readonly<Record<HookPoint, readonly RegisteredHook[]>>;
  readonly tools: readonly RegisteredTool[];
  readonly toolsByName: ReadonlyMap<string, RegisteredTool>;
  readonly transforms: readonly RegisteredTransform[];

  constructor(
    plugins: readonly InstalledPlugin[],
    /** Names the agent's `plugins` list asks for that are not installed (a typo, or an install that failed). */
    readonly missing: readonly string[] = [],
  ) {
    const hooks = Object.fromEntries(HOOK_POINT_NAMES.map((p) => [p, [] as RegisteredHook[]])) as Record<HookPoint, RegisteredHook[]>;
    for (const plugin of plugins) for (const hook of plugin.hooks) hooks[hook.point].push(hook);
    for (const point of HOOK_POINT_NAMES) hooks[point].sort(byPriority);
    this.hooks = hooks;
    this.tools = plugins.flatMap((p) => p.tools);
    this.toolsByName = new Map(this.tools.map((t) => [t.name, t]));
    this.transforms = plugins.flatMap((p) => p.transforms).sort(byPriority);
  }
}
