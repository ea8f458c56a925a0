import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { transformSync, type Options } from '@swc/core';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
/** The package entries (index.ts, plugin.ts, queue.ts…) and the folders they import from. */
const ENTRIES = readdirSync(ROOT).filter(
  (name) => name.endsWith('.ts') && !name.endsWith('.d.ts') && name !== 'jest.config.ts',
);
/** package.json's `exports`: each entry's `import` target in dist/. */
const PACKAGE_EXPORTS = (
  JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { exports: Record<string, { import: string }> }
).exports;
const SOURCES = [
  ...ENTRIES,
  'src',
  'plugins',
  'decorators',
  'examples',
  'test/support',
  'test/integration/durable/support',
];

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
 * Transpiles the project's sources, file by file with SWC and without type checking (as jest
 * does), into `outDir` (which must lie inside the project, so `node_modules` resolves): child
 * processes of multi-process tests then start as plain JavaScript in about a second, where
 * ts-node's loader needs tens of seconds on a busy machine.
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
  // Named and mapped like the package (its `exports`, out of dist/), so self-imports (`trellis/plugin`, `trellis/plugins/memory`) resolve to the output.
  const exports = Object.fromEntries(
    Object.entries(PACKAGE_EXPORTS).map(([subpath, target]) => [subpath, target.import.replace(/^\.\/dist\//, './')]),
  );
  writeFileSync(join(outDir, 'package.json'), JSON.stringify({ name: 'trellis', type: 'module', exports }));
  return resolver(outDir);
}

/**
 * One transpiled tree for the whole jest run ({@link transpileProject} into
 * `node_modules/.cache/trellis-tree-<run>`, built by the first suite that asks and reused by
 * the rest; `jest-global-teardown.mjs` removes it): a suite's child processes then cost
 * neither ts-node's start nor a transpile of their own.
 */
export function sharedTranspiledProject(): (relativePath: string) => string {
  const run = process.env.TRELLIS_TEST_RUN ?? String(process.pid);
  const outDir = join(ROOT, 'node_modules', '.cache', `trellis-tree-${run}`);
  if (existsSync(join(outDir, 'package.json'))) return resolver(outDir);
  // Built aside, then renamed into place whole: a suite in another worker never sees half a tree.
  const building = `${outDir}.${process.pid}-${Date.now()}`;
  transpileProject(building);
  try {
    renameSync(building, outDir);
  } catch {
    // Another worker finished first: use its tree.
    rmSync(building, { recursive: true, force: true });
  }
  return resolver(outDir);
}

/** Where a transpiled tree under `outDir` keeps a `.ts` file of the project, as `.js`. */
function resolver(outDir: string): (relativePath: string) => string {
  return (relativePath) => join(outDir, relativePath).replace(/\.ts$/, '.js');
}

function tsFiles(path: string): string[] {
  if (!statSync(path).isDirectory()) return path.endsWith('.ts') && !path.endsWith('.d.ts') ? [path] : [];
  return readdirSync(path).flatMap((name) =>
    name === 'node_modules' || name === 'results' ? [] : tsFiles(join(path, name)),
  );
}
