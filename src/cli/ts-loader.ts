import { existsSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { TrellisError } from '../../index.js';
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
  if (registeredFor !== undefined || loadsTypeScriptAlready()) return;
  const found = findTsconfig(dir);
  if (found) checkDecoratorSettings(found);
  const tsconfig = found ?? join(trellisPackage().root, 'templates/typescript-loader/tsconfig.json');
  try {
    const { register } = await import('tsx/esm/api');
    register({ tsconfig });
  } catch (error) {
    // Jest forbids module hooks, and its transform compiles every import already.
    if (/not supported in Jest/.test(describeError(error))) return;
    throw new TrellisError('LoadFailed', `Cannot load TypeScript files: tsx is not available (${describeError(error)})`, {
      hint: 'Reinstall trellis (tsx is one of its dependencies), or build your plugins to JavaScript and use trellis.config.js or trellis.config.json',
    });
  }
  registeredFor = tsconfig;
}

/**
 * Refuses a tsconfig.json that plainly leaves legacy decorators off: esbuild would then
 * compile standard decorators, and Trellis's fail at run time with an unhelpful message.
 * A file that extends another, or that is not plain JSON with comments, is left to tsx.
 */
export function checkDecoratorSettings(file: string): void {
  let json: { extends?: unknown; compilerOptions?: { experimentalDecorators?: unknown } };
  try {
    json = JSON.parse(readFileSync(file, 'utf8').replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '').replace(/,(\s*[}\]])/g, '$1')) as typeof json;
  } catch {
    return;
  }
  if (json.extends !== undefined || json.compilerOptions?.experimentalDecorators === true) return;
  throw new TrellisError('InvalidConfig', `${file} does not turn on legacy decorators, which Trellis's decorators (@Plugin, @Tool, @inject…) need`, {
    hint: 'Add "experimentalDecorators": true and "emitDecoratorMetadata": true to its compilerOptions (tsc reports the same problem as TS1240/TS1241; see docs/getting-started.md)',
  });
}

/** Under ts-node or tsx, .ts files load already. */
function loadsTypeScriptAlready(): boolean {
  return process.execArgv.some((a) => /ts-node|tsx/.test(a));
}
