import { existsSync, mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, relative } from 'node:path';
import { TrellisError } from '../../../../index.js';
import type { TrellisPackage } from '../package-root.js';
import type { TrellisDependency } from './trellis-dependency.js';

/** A template file whose name in the project differs (npm pack drops files named `.gitignore`). */
const RENAMED: Readonly<Record<string, string>> = { gitignore: '.gitignore' };

/** One file the scaffold writes. */
export interface ScaffoldFile {
  /** Relative to the project folder. */
  readonly path: string;
  readonly content: string;
}

/** The files of a new project in `target`, from `templates/init` of Trellis's package. */
export function scaffoldFiles(target: string, dependency: TrellisDependency, self: TrellisPackage): ScaffoldFile[] {
  const templates = join(self.root, 'templates', 'init');
  return listFiles(templates).map((file) => {
    const path = RENAMED[file] ?? file;
    const content = readFileSync(join(templates, file), 'utf8');
    return { path, content: file === 'package.json' ? projectPackageJson(content, target, dependency, self) : content };
  });
}

/**
 * Writes the files; refuses, before writing anything, when one of them exists already, so a
 * scaffold never overwrites a user's file.
 */
export function writeScaffold(target: string, files: readonly ScaffoldFile[]): void {
  const existing = files.filter((f) => existsSync(join(target, f.path))).map((f) => f.path);
  if (existing.length > 0) {
    throw new TrellisError(
      'InvalidOptions',
      `${target} already has ${existing.join(', ')}; trellis init writes no file over another`,
      {
        hint: 'Choose a new or empty folder: trellis init <dir>',
      },
    );
  }
  for (const file of files) {
    mkdirSync(dirname(join(target, file.path)), { recursive: true });
    writeFileSync(join(target, file.path), file.content);
  }
}

/** The template's package.json with the project's name, Trellis's spec, and the versions Trellis itself is tested with. */
function projectPackageJson(
  template: string,
  target: string,
  dependency: TrellisDependency,
  self: TrellisPackage,
): string {
  const json = JSON.parse(template) as {
    name: string;
    dependencies: Record<string, string>;
    devDependencies: Record<string, string>;
  };
  json.name = packageName(basename(target));
  for (const deps of [json.dependencies, json.devDependencies]) {
    for (const name of Object.keys(deps)) {
      const version =
        name === 'trellis' ? dependency.spec : (self.devDependencies[name] ?? self.peerDependencies[name]);
      if (!version)
        throw new Error(`templates/init/package.json names ${name}, which Trellis's package.json does not pin`);
      deps[name] = version;
    }
  }
  return `${JSON.stringify(json, null, 2)}\n`;
}

/** A valid npm package name from a folder name. */
export function packageName(folder: string): string {
  const name = folder
    .toLowerCase()
    .replace(/[^a-z0-9._-]+/g, '-')
    .replace(/^[._-]+|-+$/g, '');
  return name || 'my-trellis-project';
}

function listFiles(root: string, dir = root): string[] {
  return readdirSync(dir).flatMap((entry) => {
    const path = join(dir, entry);
    return statSync(path).isDirectory() ? listFiles(root, path) : [relative(root, path)];
  });
}
