import { existsSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TrellisError } from '../errors/trellis-error.js';
import { describeError } from './cli-errors.js';
import { trellisPackage } from './package-root.js';

let registeredFor: string | undefined;

/** The nearest `tsconfig.json` at or above `dir`, or `undefined`. */
export function findTsconfig(dir: string): string | undefined {
  for (let at = dir; ; at = dirname(at)) {
    const file = join(at, 'tsconfig.json');
    if (existsSync(file)) return file;
    if (dirname(at) === at) return undefined;
  }
}

/**
 * Lets plain `node` import TypeScript config and plugin files, through tsx (a dependency of
 * Trellis, so the user's project needs nothing more). Compiler settings come from the
 * nearest `tsconfig.json` above `dir`; without one, legacy decorators and `NodeNext`
 * modules (`templates/typescript-loader/tsconfig.json`). tsx compiles with esbuild, which
 * emits no decorator metadata: constructor parameters are injected with `@inject(Token)`.
 * Nothing happens when the process already runs under a TypeScript loader.
 */
export async function enableTypeScriptImports(dir: string): Promise<void> {
  if (registeredFor !== undefined || process.execArgv.some((a) => /ts-node|tsx/.test(a))) return;
  const tsconfig = findTsconfig(dir) ?? join(trellisPackage().root, 'templates/typescript-loader/tsconfig.json');
  try {
    const { register } = await import('tsx/esm/api');
    register({ tsconfig });
  } catch (error) {
    throw new TrellisError('LoadFailed', `Cannot load TypeScript files: tsx is not available (${describeError(error)})`, {
      hint: 'Reinstall trellis (tsx is one of its dependencies), or build your plugins to JavaScript and use trellis.config.js or trellis.config.json',
    });
  }
  registeredFor = tsconfig;
}
