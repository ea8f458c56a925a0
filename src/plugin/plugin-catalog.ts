import type { JsonSchema } from '../models/model-provider.js';
import type { NormalizedKey } from '../context/context-key.js';
import { HOOK_POINT_NAMES } from '../hooks/hook-points.js';
import type { RegistrySnapshot } from './registry-snapshot.js';

/** One installed plugin as `trellis plugins --json` and `trellis dev` show it. */
export interface PluginCatalogEntry {
  readonly name: string;
  readonly version: string;
  readonly description: string;
  readonly enabled: boolean;
  readonly tools: readonly { name: string; description: string; schema: JsonSchema; middleware: readonly string[]; requires: readonly string[] }[];
  readonly hooks: readonly { point: string; priority: number; method: string; requires: readonly string[] }[];
  readonly stateKeys: readonly { key: string; scope: string; merge: string; persistent: boolean }[];
  /** Every context key a member of the plugin declared with `@Requires` (`?` marks optional ones). */
  readonly requires: readonly string[];
}

/** What is installed, read from a registry snapshot, plus each hook point's handlers in run order. */
export interface PluginCatalog {
  readonly plugins: readonly PluginCatalogEntry[];
  readonly hookOrder: readonly { point: string; hooks: readonly { plugin: string; method: string; priority: number }[] }[];
}

/** The listing data of `trellis plugins`, shared by every host that shows it. */
export function pluginCatalog(registry: RegistrySnapshot): PluginCatalog {
  const plugins = registry.plugins.map((p): PluginCatalogEntry => {
    const members = [...p.tools, ...p.hooks, ...p.transforms, ...p.effects, ...p.actions];
    return {
      name: p.definition.name,
      version: p.definition.version,
      description: p.definition.description,
      enabled: p.enabled,
      tools: p.tools.map((t) => ({ name: t.name, description: t.description, schema: t.schema, middleware: t.chainNames, requires: t.requires.map(keyLabel) })),
      hooks: p.hooks.map((h) => ({ point: h.point, priority: h.priority, method: h.method, requires: h.requires.map(keyLabel) })),
      stateKeys: p.stateKeys.map((k) => ({ key: k.key, scope: k.scope, merge: k.merge, persistent: k.persistent })),
      requires: [...new Set(members.flatMap((m) => m.requires.map(keyLabel)))].sort(),
    };
  });
  const view = registry.view();
  const hookOrder = HOOK_POINT_NAMES.map((point) => ({ point, hooks: view.hooks[point].map((h) => ({ plugin: h.plugin, method: h.method, priority: h.priority })) })).filter((p) => p.hooks.length > 0);
  return { plugins, hookOrder };
}

function keyLabel(key: NormalizedKey): string {
  return key.optional ? `${key.key}?` : key.key;
}
