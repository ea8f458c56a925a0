import type { Command } from 'commander';
import { withCliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { pluginListing } from '../render/plugin-listing.js';

/** `trellis plugins`: what is installed — tools with input schemas and middleware, hooks by point and priority. */
export function registerPluginsCommand(program: Command, io: CliIo): void {
  program
    .command('plugins')
    .description('list installed plugins: tools with their input schemas and middleware, hooks by point and priority')
    .option('--json', 'print the listing as JSON')
    .action(async (options: { json?: boolean }) => {
      await withCliApp(io, async (cli) => {
        const { registry } = cli.app;
        if (!options.json) {
          io.out(`Plugins from ${cli.configFile ?? 'the SQL report desk example (no trellis.config.* here)'}:`);
          io.out();
          for (const line of pluginListing(registry)) io.out(line);
          return;
        }
        const plugins = registry.plugins.map((p) => ({
          name: p.definition.name,
          version: p.definition.version,
          description: p.definition.description,
          enabled: p.enabled,
          tools: p.tools.map((t) => ({ name: t.name, description: t.description, schema: t.schema, middleware: t.chainNames, requires: t.requires })),
          hooks: p.hooks.map((h) => ({ point: h.point, priority: h.priority, method: h.method, requires: h.requires })),
        }));
        io.out(JSON.stringify({ plugins }, null, 2));
      });
    });
}
