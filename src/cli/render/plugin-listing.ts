import type { NormalizedKey } from '../../context/context-key.js';
import type { JsonSchema } from '../../models/model-provider.js';
import type { RegistrySnapshot } from '../../plugin/registry-snapshot.js';
import { HOOK_POINT_NAMES } from '../../hooks/hook-points.js';

/** Installed plugins with their tools (input schema, middleware chain) and hooks, then every hook point in run order. */
export function pluginListing(registry: RegistrySnapshot): string[] {
  const lines: string[] = [];
  for (const plugin of registry.plugins) {
    const { name, version, description } = plugin.definition;
    lines.push(`${name} ${version}${description ? ` — ${description}` : ''}${plugin.enabled ? '' : ' (disabled)'}`);
    for (const tool of plugin.tools) {
      lines.push(`  tool ${tool.name}`);
      lines.push(`    ${tool.description}`);
      lines.push(`    input: ${schemaSummary(tool.schema)}`);
      lines.push(`    middleware: ${tool.chainNames.length > 0 ? tool.chainNames.join(' → ') : 'none'}`);
      lines.push(`    requires: ${requiresSummary(tool.requires)}`);
    }
    for (const hook of plugin.hooks) {
      lines.push(`  hook ${hook.point} (priority ${hook.priority}) → ${hook.method}${hook.requires.length > 0 ? ` · requires ${requiresSummary(hook.requires)}` : ''}`);
    }
    lines.push('');
  }
  lines.push('Hooks by point, in run order:');
  const view = registry.view();
  let any = false;
  for (const point of HOOK_POINT_NAMES) {
    const hooks = view.hooks[point];
    if (hooks.length === 0) continue;
    any = true;
    lines.push(`  ${point}: ${hooks.map((h) => `${h.plugin}.${h.method} (${h.priority})`).join(', ')}`);
  }
  if (!any) lines.push('  (none)');
  return lines;
}

/** Declared context keys, optional ones marked `?`: `app.user_id, app.locale?`; `none` when there are none. */
export function requiresSummary(keys: readonly NormalizedKey[]): string {
  return keys.length > 0 ? keys.map((k) => `${k.key}${k.optional ? '?' : ''}`).join(', ') : 'none';
}

/** `{ sql: string — One read-only SELECT…, limit?: integer }` */
export function schemaSummary(schema: JsonSchema): string {
  const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const fields = Object.entries(properties).map(([name, prop]) => {
    const type = Array.isArray(prop.enum) ? prop.enum.map((v) => JSON.stringify(v)).join(' | ') : String(prop.type ?? 'any');
    return `${name}${required.has(name) ? '' : '?'}: ${type}${prop.description ? ` (${String(prop.description)})` : ''}`;
  });
  return fields.length > 0 ? `{ ${fields.join(', ')} }` : '{}';
}
