import type { RegistrySnapshot } from '../../plugin/registry-snapshot.js';
import { HOOK_POINT_NAMES } from '../../hooks/hook-points.js';
import { schemaSummary } from '../../validation/schema-summary.js';

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
    }
    for (const hook of plugin.hooks) lines.push(`  hook ${hook.point} (priority ${hook.priority}) → ${hook.method}`);
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
