import { existsSync } from 'node:fs';
import { register } from 'node:module';
import { dirname, join } from 'node:path';
import { TrellisError } from '../errors/trellis-error.js';
import { describeError } from './cli-errors.js';

let registered = false;

/** What TypeScript files are compiled with when no tsconfig.json is found. */
const DEFAULT_COMPILER_OPTIONS = JSON.stringify({ module: 'NodeNext', moduleResolution: 'NodeNext', target: 'ES2022', experimentalDecorators: true, emitDecoratorMetadata: true });

function hasTsconfig(dir: string): boolean {
  for (let at = dir; ; at = dirname(at)) {
    if (existsSync(join(at, 'tsconfig.json'))) return true;
    if (dirname(at) === at) return false;
  }
}

/**
 * Lets plain `node` import TypeScript config and plugin files by registering ts-node's ESM
 * loader (transpile-only, so decorator metadata is still emitted from the project's
 * tsconfig, or decorators with metadata when there is no tsconfig.json). Nothing happens when the CLI already runs under a TypeScript loader.
 */
export function enableTypeScriptImports(env: NodeJS.ProcessEnv): void {
  if (registered || process.execArgv.some((a) => a.includes('ts-node'))) return;
  env.TS_NODE_TRANSPILE_ONLY ??= 'true';
  process.env.TS_NODE_TRANSPILE_ONLY ??= env.TS_NODE_TRANSPILE_ONLY;
  if (!env.TS_NODE_PROJECT && !env.TS_NODE_COMPILER_OPTIONS && !hasTsconfig(process.cwd())) {
    // No tsconfig.json: ts-node's own default fails on TypeScript 5 (TS5109), and plugins need legacy decorators with metadata.
    env.TS_NODE_COMPILER_OPTIONS = DEFAULT_COMPILER_OPTIONS;
    process.env.TS_NODE_COMPILER_OPTIONS ??= DEFAULT_COMPILER_OPTIONS;
  }
  try {
    register('ts-node/esm', import.meta.url);
  } catch (error) {
    throw new TrellisError('LoadFailed', `Cannot load TypeScript files: ts-node is not available (${describeError(error)})`, {
      hint: 'Install ts-node in the project, or build your plugins to JavaScript and use trellis.config.js or trellis.config.json',
    });
  }
  registered = true;
}
