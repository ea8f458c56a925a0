/**
 * Maps the package's own entries (`trellis`, `trellis/plugin`, `trellis/plugins/memory`, …)
 * to their TypeScript sources for child processes run with `--loader ts-node/esm`, which
 * ignores tsconfig `paths` and would otherwise take the `exports` of package.json into dist/.
 * Pass it after ts-node: `node --loader ts-node/esm --loader ./test/support/source-entries.loader.mjs child.ts`.
 */
import { readFileSync } from 'node:fs';

const ROOT = new URL('../../', import.meta.url);
/** package.json's `exports`, `./dist/x.js` read as `x.ts`: one list of entries, kept in one place. */
const ENTRIES = Object.fromEntries(
  Object.entries(JSON.parse(readFileSync(new URL('package.json', ROOT), 'utf8')).exports).map(([subpath, target]) => [
    subpath === '.' ? 'trellis' : `trellis/${subpath.slice(2)}`,
    target.import.replace(/^\.\/dist\//, '').replace(/\.js$/, '.ts'),
  ]),
);

export async function resolve(specifier, context, next) {
  const file = ENTRIES[specifier];
  return file === undefined ? next(specifier, context) : { url: new URL(file, ROOT).href, shortCircuit: true };
}
