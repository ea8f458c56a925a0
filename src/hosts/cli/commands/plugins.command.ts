import type { Command } from 'commander';
import { withCliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { pluginListing } from '../render/plugin-listing.js';

/** `trellis plugins`: what is installed — tools with input schemas and middleware, hooks by point and priority. */
export function registerPluginsCommand(program: Command, io: CliIo): void {
  program
    .command('plugins')
    .description(
      'list installed plugins with their owners: tools with their input schemas and middleware, hooks by point and priority',
    )
    .option('--json', "print the listing as JSON, with each plugin's contract (for trellis contract diff)")
    .action(async (options: { json?: boolean }) => {
      await withCliApp(io, async (cli) => {
        const description = cli.app.describe();
        if (!options.json) {
          io.out(`Plugins from ${cli.configFile ?? 'the SQL report desk example (no trellis.config.* here)'}:`);
          io.out();
          for (const line of pluginListing(description)) io.out(line);
          return;
        }
        const contracts = new Map(cli.app.contracts().map((c) => [c.name, c]));
        const plugins = description.plugins.map((p) => ({
          name: p.name,
          version: p.version,
          ...(p.owner !== undefined && { owner: p.owner }),
          description: p.description,
          enabled: p.enabled,
          tools: p.tools.map((t) => ({
            name: t.name,
            description: t.description,
            schema: t.inputSchema,
            middleware: t.middleware,
            requires: t.requires,
            tags: t.tags,
          })),
          hooks: p.hooks.map((h) => ({ point: h.point, priority: h.priority, method: h.method })),
          // What other teams may rely on: `trellis contract diff old.json new.json` compares two of these files.
          contract: contracts.get(p.name),
        }));
        io.out(JSON.stringify({ plugins }, null, 2));
      });
    });
}
