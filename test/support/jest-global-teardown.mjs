import { rmSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

/** Removes what the run shared between suites: the transpiled tree (test/support/transpiled-tree.ts). */
export default function teardown() {
  const run = process.env.TRELLIS_TEST_RUN;
  if (run)
    rmSync(fileURLToPath(new URL(`../../node_modules/.cache/trellis-tree-${run}`, import.meta.url)), {
      recursive: true,
      force: true,
    });
}
