/**
 * Maps the package's own entries (`trellis`, `trellis/plugin`, `trellis/testing`) to their
 * TypeScript sources for child processes run with `--loader ts-node/esm`, which ignores
 * tsconfig `paths` and would otherwise take the `exports` of package.json into dist/.
 * Pass it after ts-node: `node --loader ts-node/esm --loader ./test/support/source-entries.loader.mjs child.ts`.
 */
const ROOT = new URL('../../', import.meta.url);
const ENTRIES = { trellis: 'index.ts', 'trellis/plugin': 'plugin.ts', 'trellis/testing': 'testing.ts' };

export async function resolve(specifier, context, next) {
  const file = ENTRIES[specifier];
  return file === undefined ? next(specifier, context) : { url: new URL(file, ROOT).href, shortCircuit: true };
}
