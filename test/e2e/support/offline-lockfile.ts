import { createHash } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import { join, relative } from 'node:path';

interface LockEntry {
  version?: string;
  resolved?: string;
  integrity?: string;
  dependencies?: Record<string, string>;
  [field: string]: unknown;
}

interface Lockfile {
  name: string;
  version: string;
  lockfileVersion: number;
  requires: boolean;
  packages: Record<string, LockEntry>;
}

/**
 * Writes a package-lock.json for a scaffolded project, so `npm install --offline` needs only
 * tarballs from the npm cache: npm 11 fetches a full packument for every dependency it
 * resolves without a lockfile, and the cache filled by this repo's `npm ci` holds tarballs,
 * not those; and entries without `resolved` send npm to a packument for the tarball's URL. Every version comes from this repo's own lockfile (the scaffold pins the same
 * ones); trellis itself is the packed tarball. Entries the project does not need are left
 * for npm to prune.
 */
export function writeOfflineLockfile(project: string, repoRoot: string, tarball: string): void {
  const repoLock = JSON.parse(readFileSync(join(repoRoot, 'package-lock.json'), 'utf8')) as Lockfile;
  const repoPackage = JSON.parse(readFileSync(join(repoRoot, 'package.json'), 'utf8')) as Record<string, unknown>;
  const projectPackage = JSON.parse(readFileSync(join(project, 'package.json'), 'utf8')) as Record<string, unknown>;
  const packages: Record<string, LockEntry> = {};
  packages[''] = pick(projectPackage, ['name', 'version', 'dependencies', 'devDependencies', 'engines']);
  packages['node_modules/trellis'] = {
    ...pick(repoPackage, ['version', 'license', 'dependencies', 'peerDependencies', 'bin', 'engines']),
    resolved: `file:${relative(project, tarball)}`,
    integrity: `sha512-${createHash('sha512').update(readFileSync(tarball)).digest('base64')}`,
  };
  for (const [path, entry] of Object.entries(repoLock.packages)) {
    if (path !== '' && !(path in packages))
      packages[path] = entry.resolved || entry.link ? entry : { ...entry, resolved: registryTarball(path, entry) };
  }
  const lock: Lockfile = {
    name: String(projectPackage.name),
    version: String(projectPackage.version),
    lockfileVersion: 3,
    requires: true,
    packages,
  };
  writeFileSync(join(project, 'package-lock.json'), `${JSON.stringify(lock, null, 2)}\n`);
}

/** Where the registry keeps a package's tarball: npm finds it in its cache by this URL, with no packument. */
function registryTarball(path: string, entry: LockEntry): string {
  const name = path.slice(path.lastIndexOf('node_modules/') + 'node_modules/'.length);
  const base = name.startsWith('@') ? name.split('/')[1]! : name;
  return `https://registry.npmjs.org/${name}/-/${base}-${String(entry.version)}.tgz`;
}

function pick(from: Record<string, unknown>, keys: readonly string[]): LockEntry {
  return Object.fromEntries(keys.filter((k) => from[k] !== undefined).map((k) => [k, from[k]]));
}
