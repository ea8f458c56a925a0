import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import type { Command } from 'commander';
import { TrellisError } from '../../../../index.js';
import { CONTRACT_VERSION, diffContracts, type PluginContract } from '../../../../governance.js';
import type { CliIo } from '../cli-io.js';

/** `trellis contract diff old.json new.json`: breaking and compatible changes between two `trellis plugins --json` files; exit 1 on a breaking change without a major bump. */
export function registerContractCommand(program: Command, io: CliIo): void {
  const contract = program
    .command('contract')
    .description("compare plugins' contracts (from trellis plugins --json) for each team's CI");
  contract
    .command('diff')
    .description(
      'classify each change between two contract files as breaking or compatible; exits 1 on a breaking change without a major version bump',
    )
    .argument('<old>', 'the contracts before (trellis plugins --json > old.json)')
    .argument('<new>', 'the contracts after')
    .option('--json', 'print the changes as JSON')
    .action(async (oldFile: string, newFile: string, options: { json?: boolean }) => {
      const diff = diffContracts(readContracts(resolve(io.cwd, oldFile)), readContracts(resolve(io.cwd, newFile)));
      if (options.json) io.out(JSON.stringify(diff, null, 2));
      else {
        for (const c of diff.changes)
          io.out(`${c.kind === 'breaking' ? 'BREAKING  ' : 'compatible'}  ${c.plugin}  ${c.where}: ${c.what}`);
        for (const p of diff.plugins.filter((x) => x.breaking + x.compatible > 0)) {
          io.out(
            `${p.name} ${p.from ?? '(new)'} → ${p.to ?? '(removed)'}: ${p.breaking} breaking, ${p.compatible} compatible${p.unbumped ? ' — breaking changes need a major version bump' : ''}`,
          );
        }
        if (diff.changes.length === 0) io.out('No contract changes.');
      }
      const unbumped = diff.plugins.filter((p) => p.unbumped);
      if (unbumped.length > 0) {
        throw new TrellisError(
          'BreakingChange',
          `Breaking contract changes without a major version bump: ${unbumped.map((p) => `${p.name} ${p.from} → ${p.to}`).join(', ')}`,
          {
            hint: 'Bump the major version (the minor one for 0.x) of each, or keep the old contract alongside the new one',
          },
        );
      }
    });
}

/** The contracts in a file: `trellis plugins --json` output, `{ contracts: [...] }`, a list of contracts, or one. */
function readContracts(file: string): PluginContract[] {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (error) {
    throw new TrellisError('Unreadable', `Cannot read contracts from ${file}: ${(error as Error).message}`, {
      hint: 'Write it with: trellis plugins --json > file.json',
    });
  }
  const list = Array.isArray(raw)
    ? raw
    : isObject(raw) && Array.isArray(raw['plugins'])
      ? raw['plugins'].map((p: unknown) => (isObject(p) && p['contract'] !== undefined ? p['contract'] : p))
      : isObject(raw) && Array.isArray(raw['contracts'])
        ? raw['contracts']
        : [raw];
  return list.map((c, i) => {
    if (
      !isObject(c) ||
      c['contractVersion'] !== CONTRACT_VERSION ||
      typeof c['name'] !== 'string' ||
      typeof c['version'] !== 'string' ||
      !Array.isArray(c['tools'])
    ) {
      throw new TrellisError(
        'Unreadable',
        `${file}: entry ${i + 1} is not a plugin contract of version ${CONTRACT_VERSION}`,
        { hint: 'Write the file with this Trellis: trellis plugins --json > file.json' },
      );
    }
    return c as unknown as PluginContract;
  });
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
