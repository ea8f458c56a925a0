import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';

/** What the CLI reads from Trellis's own package.json. */
export interface TrellisPackage {
  /** The folder holding Trellis's package.json (the clone, or `node_modules/trellis`). */
  readonly root: string;
  readonly version: string;
  readonly peerDependencies: Readonly<Record<string, string>>;
  readonly devDependencies: Readonly<Record<string, string>>;
}

let found: TrellisPackage | undefined;

/**
 * Trellis's own package: found by walking up from this module, which sits at
 * `src/hosts/cli/` in a clone and at `dist/src/hosts/cli/` in a build or an installed package.
 */
export function trellisPackage(): TrellisPackage {
  if (found) return found;
  for (let dir = dirname(fileURLToPath(import.meta.url)); ; dir = dirname(dir)) {
    const file = join(dir, 'package.json');
    if (existsSync(file)) {
      const json = JSON.parse(readFileSync(file, 'utf8')) as Partial<TrellisPackage> & { name?: string };
      if (json.name === 'trellis') {
        found = {
          root: dir,
          version: json.version ?? '0.0.0',
          peerDependencies: json.peerDependencies ?? {},
          devDependencies: json.devDependencies ?? {},
        };
        return found;
      }
    }
    if (dirname(dir) === dir)
      throw new Error(`Trellis's package.json was not found above ${fileURLToPath(import.meta.url)}`);
  }
}
