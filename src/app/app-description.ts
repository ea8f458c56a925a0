import { HOOK_POINT_NAMES, type HookPoint } from '../contract/hook-points.js';
import type { JsonSchema } from '../contract/model-provider.js';
import type { RegistrySnapshot } from '../engine/plugin/registry-snapshot.js';
import { secretFields } from '../redaction/redactor.js';

/** A tool as `app.describe()` lists it. */
export interface ToolInfo {
  readonly name: string;
  readonly plugin: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** The JSON Schema of its input, as the model sees it. */
  readonly inputSchema: JsonSchema;
  /** Its middleware chain, outermost first. */
  readonly middleware: readonly string[];
  /** The context keys it declared with `@Requires` (its own, its class's and its middleware's). */
  readonly requires: readonly { readonly key: string; readonly optional: boolean }[];
  readonly timeoutMs?: number;
  /** `@Tool({ idempotent: true })` or `onCrash: 'retry'`: run again by itself when a crash cut a call of it off mid-run. */
  readonly idempotent: boolean;
  /** What a call of it cut off mid-run by a crash becomes: run again (`retry`) or a `retry`/`skip` decision (`ask`). */
  readonly onCrash: 'retry' | 'ask';
  /** Input fields marked `@Secret()`: shown as `[Redacted]` wherever a call is displayed. */
  readonly secretFields: readonly string[];
}

/** A hook handler as `app.describe()` lists it. */
export interface HookInfo {
  readonly point: HookPoint;
  readonly plugin: string;
  readonly method: string;
  readonly priority: number;
}

/** An installed plugin as `app.describe()` lists it. */
export interface PluginInfo {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** The owning team (`@Plugin({ owner })`), when given. */
  readonly owner?: string;
  readonly enabled: boolean;
  readonly dependsOn: readonly string[];
  /** The semver range each dependency must satisfy, by name, where one was given. */
  readonly dependsOnRanges: Readonly<Record<string, string>>;
  readonly tools: readonly ToolInfo[];
  readonly hooks: readonly HookInfo[];
  readonly stateKeys: readonly {
    readonly key: string;
    readonly scope: string;
    readonly merge: string;
    readonly persistent: boolean;
  }[];
}

/** What is installed: plugins, and every point's handlers in the order they run. */
export interface AppDescription {
  readonly plugins: readonly PluginInfo[];
  /** Points with handlers, each with its handlers in run order (enabled plugins). */
  readonly hookOrder: readonly { readonly point: HookPoint; readonly handlers: readonly HookInfo[] }[];
}

/** Plain data about a registry snapshot: safe to print, serialise or send over HTTP. */
export function describeRegistry(registry: RegistrySnapshot): AppDescription {
  const plugins = registry.plugins.map((p): PluginInfo => ({
    name: p.definition.name,
    version: p.definition.version,
    description: p.definition.description,
    tags: p.definition.tags,
    ...(p.definition.owner !== undefined && { owner: p.definition.owner }),
    enabled: p.enabled,
    dependsOn: p.definition.dependsOn,
    dependsOnRanges: p.definition.dependsOnRanges,
    tools: p.tools.map((t) => ({
      name: t.name,
      plugin: t.plugin,
      description: t.description,
      tags: t.tags,
      inputSchema: t.schema,
      middleware: t.chainNames,
      requires: t.requires.map((r) => ({ key: r.key, optional: r.optional })),
      ...(t.timeoutMs !== undefined && { timeoutMs: t.timeoutMs }),
      idempotent: t.onCrash === 'retry',
      onCrash: t.onCrash,
      secretFields: secretFields(t.input),
    })),
    hooks: p.hooks.map((h) => ({ point: h.point, plugin: h.plugin, method: h.method, priority: h.priority })),
    stateKeys: p.stateKeys
      .filter((k) => !k.key.endsWith('.result') || !p.tools.some((t) => `${t.name}.result` === k.key))
      .map((k) => ({ key: k.key, scope: k.scope, merge: k.merge, persistent: k.persistent })),
  }));
  const view = registry.view();
  const hookOrder = HOOK_POINT_NAMES.filter((point) => view.hooks[point].length > 0).map((point) => ({
    point,
    handlers: view.hooks[point].map((h) => ({ point, plugin: h.plugin, method: h.method, priority: h.priority })),
  }));
  return { plugins, hookOrder };
}
