import { fileURLToPath } from 'node:url';

/** The project root: the working directory for TypeScript children. */
export const PROJECT_ROOT = fileURLToPath(new URL('../../', import.meta.url));

/**
 * Node options that run a TypeScript file in a child process: ts-node's ESM loader, then
 * {@link ./source-entries.loader.mjs} so `trellis`, `trellis/plugin` and `trellis/testing`
 * resolve to the sources (as jest's `moduleNameMapper` does) rather than to dist/.
 */
export const TS_NODE_ARGS: readonly string[] = [
  '--no-warnings',
  '--loader',
  'ts-node/esm',
  '--loader',
  new URL('./source-entries.loader.mjs', import.meta.url).href,
];

/**
 * The environment for such a child: ts-node transpiles only (the suite type-checks
 * separately), with SWC, as jest does; ts-node hands it the tsconfig's legacy decorators
 * and decorator metadata. A start still costs about 7 s of CPU, mostly ts-node itself.
 */
export function tsNodeEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  return { ...process.env, TS_NODE_TRANSPILE_ONLY: 'true', TS_NODE_SWC: 'true', ...extra };
}
