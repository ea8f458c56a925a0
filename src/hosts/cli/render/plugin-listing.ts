import type { AppDescription } from '../../../../index.js';
import { schemaSummary } from '../../../engine/validation/schema-summary.js';

/** Installed plugins with their tools (input schema, middleware chain, `@Requires` keys) and hooks, then every hook point in run order. */
export function pluginListing(app: AppDescription): string[] {
  const lines: string[] = [];
  for (const plugin of app.plugins) {
    const { name, version, description } = plugin;
    lines.push(`${name} ${version}${description ? ` — ${description}` : ''}${plugin.enabled ? '' : ' (disabled)'}`);
    lines.push(
      `  owner: ${plugin.owner ?? '(none)'}${
        Object.keys(plugin.dependsOnRanges).length > 0
          ? ` · depends on ${Object.entries(plugin.dependsOnRanges)
              .map(([n, r]) => `${n} ${r}`)
              .join(', ')}`
          : ''
      }`,
    );
    for (const tool of plugin.tools) {
      lines.push(`  tool ${tool.name}`);
      lines.push(`    ${tool.description}`);
      lines.push(`    input: ${schemaSummary(tool.inputSchema)}`);
      const source = tool.tags.find((tag) => tag.startsWith('mcp:'));
      if (source) lines.push(`    source: MCP server ${source.slice(4).replace('/', ', tool ')}`);
      lines.push(`    middleware: ${tool.middleware.length > 0 ? tool.middleware.join(' → ') : 'none'}`);
      lines.push(`    requires: ${requiresSummary(tool.requires)}`);
    }
    for (const hook of plugin.hooks) lines.push(`  hook ${hook.point} (priority ${hook.priority}) → ${hook.method}`);
    lines.push('');
  }
  lines.push('Hooks by point, in run order:');
  for (const { point, handlers } of app.hookOrder)
    lines.push(`  ${point}: ${handlers.map((h) => `${h.plugin}.${h.method} (${h.priority})`).join(', ')}`);
  if (app.hookOrder.length === 0) lines.push('  (none)');
  return lines;
}

/** Declared context keys, optional ones marked `?`: `app.user_id, app.locale?`; `none` when there are none. */
export function requiresSummary(keys: readonly { readonly key: string; readonly optional: boolean }[]): string {
  return keys.length > 0 ? keys.map((k) => `${k.key}${k.optional ? '?' : ''}`).join(', ') : 'none';
}
