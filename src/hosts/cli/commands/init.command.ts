import { relative, resolve } from 'node:path';
import type { Command } from 'commander';
import type { CliIo } from '../cli-io.js';
import { scaffoldFiles, writeScaffold } from '../init/scaffold.js';
import { trellisDependency } from '../init/trellis-dependency.js';
import { trellisPackage } from '../package-root.js';

/** `trellis init [dir] [--trellis <spec>]`: a new project with a tested example plugin, ready for `npm install && npm test`. */
export function registerInitCommand(program: Command, io: CliIo): void {
  program
    .command('init')
    .description(
      'create a project: package.json, tsconfig, jest config, trellis.config.ts, an example plugin and its test',
    )
    .argument('[dir]', 'the folder to create it in (made when missing)', '.')
    .option(
      '--trellis <spec>',
      'where to install Trellis from: a clone folder, a tarball from npm pack, or a version (default: this clone, else the registry)',
    )
    .action((dir: string, options: { trellis?: string }) => {
      const target = resolve(io.cwd, dir);
      const self = trellisPackage();
      const dependency = trellisDependency(options.trellis, io.cwd, target, self);
      const files = scaffoldFiles(target, dependency, self);
      writeScaffold(target, files);
      io.out(`Created a Trellis project in ${target} (trellis from ${dependency.describe}):`);
      for (const file of files) io.out(`  ${file.path}`);
      const cd = relative(io.cwd, target);
      io.out('');
      io.out('Next:');
      if (cd) io.out(`  cd ${cd}`);
      io.out('  npm install');
      io.out('  npm test');
      io.out('  npx trellis run "Greet Ada"');
    });
}
