import { mkdirSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync, type Options } from '@swc/core';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The package entries (index.ts, plugin.ts, queue.ts…) and the folders they import from. */
const ENTRIES = readdirSync(ROOT).filter((name) => name.endsWith('.ts') && !name.endsWith('.d.ts') && name !== 'jest.config.ts');
const SOURCES = [...ENTRIES, 'src', 'plugins', 'decorators', 'examples', 'test/support'];

/** As jest.config.ts compiles the sources: legacy decorators with their metadata, as tsc emits them. */
const SWC: Options = {
  swcrc: false,
  module: { type: 'es6' },
  jsc: {
    target: 'es2022',
    parser: { syntax: 'typescript', decorators: true },
    transform: { legacyDecorator: true, decoratorMetadata: true, useDefineForClassFields: true },
    keepClassNames: true,
  },
};

/**
 * Transpiles the project's sources, file by file and without type checking, into `outDir`
 * (which must lie inside the project, so `node_modules` resolves): child processes of
 * multi-process tests then start as plain JavaScript in about a second, where ts-node's
 * loader needs tens of seconds on a busy machine. SWC does it as jest does, in well under a
 * second for the whole tree (TypeScript's `transpileModule` took 14 s on a busy 2-core machine).
 *
 * @returns the path of `relativePath` (a `.ts` file of the project) in the output, as `.js`.
 */
export function transpileProject(outDir: string): (relativePath: string) => string {
  for (const source of SOURCES) {
    for (const file of tsFiles(join(ROOT, source))) {
      const output = transformSync(readFileSync(file, 'utf8'), { ...SWC, filename: file }).code;
      const target = join(outDir, relative(ROOT, file)).replace(/\.ts$/, '.js');
      mkdirSync(dirname(target), { recursive: true });
      writeFileSync(target, output);
    }
  }
  // Named and mapped like the package, so self-imports (`trellis/plugin`) resolve to the output.
  const exports = Object.fromEntries(ENTRIES.map((entry) => [entry === 'index.ts' ? '.' : `./${entry.replace(/\.ts$/, '')}`, `./${entry.replace(/\.ts$/, '.js')}`]));
  writeFileSync(join(outDir, 'package.json'), JSON.stringify({ name: 'trellis', type: 'module', exports }));
  return (relativePath) => join(outDir, relativePath).replace(/\.ts$/, '.js');
}

function tsFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) => (name === 'node_modules' || name === 'results' ? [] : tsFiles(join(path, name))));
}
