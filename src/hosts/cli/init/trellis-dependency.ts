import { existsSync } from 'node:fs';
import { relative, resolve, sep } from 'node:path';
import { TrellisError } from '../../../../index.js';
import { EXIT_USAGE } from '../cli-errors.js';
import type { TrellisPackage } from '../package-root.js';

/** Where the new project gets Trellis from, as written in its package.json, and how to say it. */
export interface TrellisDependency {
  /** The `dependencies.trellis` value: `file:../trellis`, `file:../trellis-0.1.0.tgz`, `^0.1.0`… */
  readonly spec: string;
  readonly describe: string;
}

const PASSED_THROUGH = /^(file:|npm:|git\+|git:|github:|https?:)/;
const VERSION_OR_TAG = /^[~^<>=v\d*xX]|^[a-z][\w.-]*$/;

/**
 * The dependency a scaffold declares. `given` is what the user named with `--trellis`: a
 * folder (a clone), a `.tgz` (from `npm pack`), a version range or tag, or any spec npm
 * takes (`file:`, `git+…`). Without it: this very Trellis when it runs from a clone (so a
 * scaffold works before anything is published), else the registry at this version.
 */
export function trellisDependency(
  given: string | undefined,
  cwd: string,
  target: string,
  self: TrellisPackage,
): TrellisDependency {
  if (given === undefined) {
    const fromClone = !self.root.split(sep).includes('node_modules');
    if (fromClone) return local(self.root, target, 'this Trellis clone');
    return { spec: `^${self.version}`, describe: `the npm registry (^${self.version})` };
  }
  if (PASSED_THROUGH.test(given)) return { spec: given, describe: given };
  const path = resolve(cwd, given);
  if (existsSync(path)) return local(path, target, path.endsWith('.tgz') ? 'the tarball' : 'the folder');
  if (given.endsWith('.tgz') || given.includes('/') || given.startsWith('.')) {
    throw new TrellisError('InvalidOptions', `--trellis ${given}: no such file or folder (${path})`, {
      hint: 'Give the path of a Trellis clone or of a tarball made with npm pack, or a version such as ^0.1.0',
      details: { exitCode: EXIT_USAGE },
    });
  }
  if (!VERSION_OR_TAG.test(given)) {
    throw new TrellisError('InvalidOptions', `--trellis ${given}: not a path, a tarball or a version`, {
      hint: 'e.g. --trellis ../trellis, --trellis ./trellis-0.1.0.tgz or --trellis ^0.1.0',
      details: { exitCode: EXIT_USAGE },
    });
  }
  return { spec: given, describe: `the npm registry (${given})` };
}

function local(path: string, target: string, what: string): TrellisDependency {
  const rel = relative(target, path).split(sep).join('/');
  return { spec: `file:${rel.startsWith('.') ? rel : `./${rel}`}`, describe: `${what} ${path}` };
}
