import type { Command } from 'commander';
import { withCliApp } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { pluginCatalog } from '../../plugin/plugin-catalog.js';
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
        io.out(JSON.stringify({ plugins: pluginCatalog(registry).plugins }, null, 2));
      });
    });
}
