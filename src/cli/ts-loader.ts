import { register } from 'node:module';
import { TrellisError } from '../errors/trellis-error.js';

let registered = false;

/**
 * Lets plain `node` import TypeScript config and plugin files by registering ts-node's ESM
 * loader (transpile-only, so decorator metadata is still emitted from the project's
 * tsconfig). Nothing happens when the CLI already runs under a TypeScript loader.
 */
export function enableTypeScriptImports(env: NodeJS.ProcessEnv): void {
  if (registered || process.execArgv.some((a) => a.includes('ts-node'))) return;
  env.TS_NODE_TRANSPILE_ONLY ??= 'true';
  process.env.TS_NODE_TRANSPILE_ONLY ??= env.TS_NODE_TRANSPILE_ONLY;
  try {
    register('ts-node/esm', import.meta.url);
  } catch (error) {
    throw new TrellisError('LoadFailed', `Cannot load TypeScript files: ts-node is not available (${error instanceof Error ? error.message : String(error)})`, {
      hint: 'Install ts-node in the project, or build your plugins to JavaScript and use trellis.config.js or trellis.config.json',
    });
  }
  registered = true;
}
