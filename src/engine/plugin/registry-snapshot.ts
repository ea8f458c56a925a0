import { HOOK_POINT_NAMES, type HookPoint } from '../../contract/hook-points.js';
import { BUILT_IN_ACTION_HANDLERS } from '../state/built-in-actions.js';
import { KERNEL_STATE_KEYS } from '../../contract/kernel-keys.js';
import type { StateSchema } from '../../contract/state-schema.js';
import type { InstalledPlugin } from './installed-plugin.js';
import type {
  KeyedHandler,
  RegisteredHook,
  RegisteredTool,
  RegisteredTransform,
  StateKeyEntry,
} from '../../contract/plugin-member.js';

const byPriority = (a: { priority: number; order: number }, b: { priority: number; order: number }) =>
  a.priority - b.priority || a.order - b.order;

/**
 * The set of installed plugins at one moment. Install, uninstall and reload build a new
 * snapshot and swap it in one assignment, so nobody ever sees both versions of a plugin
 * or neither; a running turn keeps the snapshot it started with.
 */
export class RegistrySnapshot implements StateSchema {
  readonly byName: ReadonlyMap<string, InstalledPlugin>;
  readonly stateKeys: ReadonlyMap<string, StateKeyEntry>;
  readonly effects: ReadonlyMap<string, readonly KeyedHandler[]>;
  readonly actions: ReadonlyMap<string, KeyedHandler>;
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  private readonly views = new Map<string, ActiveView>();

  /**
   * The snapshot of `plugins`. With `base`, whose plugins are the first ones of `plugins`
   * (an install appends one), only the plugins after them are added, to copies of `base`'s
   * maps (the maps they add nothing to are shared: no snapshot changes a map once built).
   * The same maps a build from scratch gives (a `Map` keeps a key where it was first set and
   * takes the last value, either way), without walking every installed plugin's parts again
   * on every install.
   */
  constructor(
    readonly plugins: readonly InstalledPlugin[],
    base?: RegistrySnapshot,
  ) {
    if (base !== undefined && base.plugins.length <= plugins.length && base.plugins.every((p, i) => plugins[i] === p)) {
      const added = plugins.slice(base.plugins.length);
      this.byName = added.length === 0 ? base.byName : new Map(base.byName);
      this.stateKeys = added.some((p) => p.stateKeys.length > 0) ? new Map(base.stateKeys) : base.stateKeys;
      this.effects = added.some((p) => p.effects.length > 0) ? new Map(base.effects) : base.effects;
      this.actions = added.some((p) => p.actions.length > 0) ? new Map(base.actions) : base.actions;
      this.tools = added.some((p) => p.tools.length > 0) ? new Map(base.tools) : base.tools;
      this.#add(added);
    } else {
      this.byName = new Map();
      this.stateKeys = new Map(KERNEL_STATE_KEYS.map((key) => [key.key, key]));
      this.effects = new Map();
      this.actions = new Map(BUILT_IN_ACTION_HANDLERS.map((handler) => [handler.key, handler]));
      this.tools = new Map();
      this.#add(plugins);
    }
  }

  /** Adds `plugins`' parts to this snapshot's maps while it is built (the maps they add to are its own copies). */
  #add(plugins: readonly InstalledPlugin[]): void {
    const byName = this.byName as Map<string, InstalledPlugin>;
    const stateKeys = this.stateKeys as Map<string, StateKeyEntry>;
    const effects = this.effects as Map<string, readonly KeyedHandler[]>;
    const actions = this.actions as Map<string, KeyedHandler>;
    const tools = this.tools as Map<string, RegisteredTool>;
    for (const plugin of plugins) {
      byName.set(plugin.definition.name, plugin);
      for (const key of plugin.stateKeys) stateKeys.set(key.key, key);
      for (const handler of plugin.actions) actions.set(handler.key, handler);
      // A new list, not a push: the list may be `base`'s.
      for (const handler of plugin.effects) effects.set(handler.key, [...(effects.get(handler.key) ?? []), handler]);
      for (const tool of plugin.tools) tools.set(tool.name, tool);
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
      view = new ActiveView(
        this.plugins.filter((p) => p.enabled && (wanted.size === 0 || wanted.has(p.definition.name))),
        missing,
      );
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
    const hooks = Object.fromEntries(HOOK_POINT_NAMES.map((p) => [p, [] as RegisteredHook[]])) as Record<
      HookPoint,
      RegisteredHook[]
    >;
    for (const plugin of plugins) for (const hook of plugin.hooks) hooks[hook.point].push(hook);
    for (const point of HOOK_POINT_NAMES) hooks[point].sort(byPriority);
    this.hooks = hooks;
    this.tools = plugins.flatMap((p) => p.tools);
    this.toolsByName = new Map(this.tools.map((t) => [t.name, t]));
    this.transforms = plugins.flatMap((p) => p.transforms).sort(byPriority);
  }
}
