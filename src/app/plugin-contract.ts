import type { JsonSchema } from '../contract/model-provider.js';
import type { InstalledPlugin } from '../engine/plugin/installed-plugin.js';
import { dtoJsonSchema } from '../engine/validation/dto-json-schema.js';

/** The version of the {@link PluginContract} shape, for tools that read contracts written by another Trellis. */
export const CONTRACT_VERSION = 1;

/**
 * What other teams' plugins and hosts may rely on in a plugin: its tools' input and output
 * schemas, the hook points it handles, the context keys it reads and writes, its state keys,
 * the effects and actions it handles, and what it depends on. `trellis plugins --json` writes
 * one per plugin; `trellis contract diff` compares two.
 */
export interface PluginContract {
  readonly contractVersion: typeof CONTRACT_VERSION;
  readonly name: string;
  readonly version: string;
  readonly owner?: string;
  readonly tools: readonly {
    readonly name: string;
    readonly input: JsonSchema;
    /** The output DTO's schema, when the tool declares one. */
    readonly output?: JsonSchema;
    readonly tags: readonly string[];
  }[];
  /** Hook points handled, each once, sorted. */
  readonly hooks: readonly string[];
  readonly contextKeys: {
    /** Keys declared with `@Requires`, by any member; `optional` when every member reads it optionally. */
    readonly reads: readonly { readonly key: string; readonly optional: boolean }[];
    /** Keys it writes: its state keys and each tool's `<tool>.result`. */
    readonly writes: readonly string[];
  };
  readonly stateKeys: readonly {
    readonly key: string;
    readonly scope: string;
    readonly merge: string;
    readonly persistent: boolean;
  }[];
  readonly effects: readonly string[];
  readonly actions: readonly string[];
  /** Dependencies by name, with their semver range or `*`. */
  readonly dependsOn: Readonly<Record<string, string>>;
}

/** The contract of one installed plugin, from its registered members. */
export function pluginContract(plugin: InstalledPlugin): PluginContract {
  const d = plugin.definition;
  const reads = new Map<string, boolean>();
  const members = [...plugin.tools, ...plugin.hooks, ...plugin.transforms, ...plugin.effects, ...plugin.actions];
  for (const member of members)
    for (const r of member.requires) reads.set(r.key, (reads.get(r.key) ?? true) && r.optional);
  const own = new Set(plugin.tools.map((t) => `${t.name}.result`));
  const sorted = <T>(items: Iterable<T>, by: (t: T) => string) => [...items].sort((a, b) => by(a).localeCompare(by(b)));
  return {
    contractVersion: CONTRACT_VERSION,
    name: d.name,
    version: d.version,
    ...(d.owner !== undefined && { owner: d.owner }),
    tools: sorted(plugin.tools, (t) => t.name).map((t) => ({
      name: t.name,
      input: t.schema,
      ...(t.output && { output: dtoJsonSchema(t.output) }),
      tags: [...t.tags].sort(),
    })),
    hooks: [...new Set(plugin.hooks.map((h) => h.point))].sort(),
    contextKeys: {
      reads: sorted(reads, ([key]) => key).map(([key, optional]) => ({ key, optional })),
      writes: [...new Set([...plugin.stateKeys.map((k) => k.key), ...own])].sort(),
    },
    stateKeys: sorted(
      plugin.stateKeys.filter((k) => !own.has(k.key)),
      (k) => k.key,
    ).map((k) => ({ key: k.key, scope: k.scope, merge: k.merge, persistent: k.persistent })),
    effects: [...new Set(plugin.effects.map((e) => e.key))].sort(),
    actions: [...new Set(plugin.actions.map((a) => a.key))].sort(),
    dependsOn: Object.fromEntries(d.dependsOn.map((name) => [name, d.dependsOnRanges[name] ?? '*'])),
  };
}
