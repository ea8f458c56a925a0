import { existsSync, readFileSync } from 'node:fs';
import { createRequire, register as registerHooks } from 'node:module';
import { dirname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { TrellisError } from '../../../index.js';
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
 * emits no decorator metadata; where the tsconfig asks for it (`emitDecoratorMetadata`) and
 * the project has `typescript` installed, modules with decorators are compiled by
 * TypeScript instead ({@link ./decorator-metadata-loader.ts}), so constructor injection by
 * type works as under tsc and ts-jest. Nothing happens when the process already runs under
 * a TypeScript loader.
 */
export async function enableTypeScriptImports(dir: string): Promise<void> {
  if (registeredFor !== undefined || loadsTypeScriptAlready()) return;
  const found = findTsconfig(dir);
  if (found) checkDecoratorSettings(found);
  const tsconfig = found ?? join(trellisPackage().root, 'templates/typescript-loader/tsconfig.json');
  try {
    const { register } = await import('tsx/esm/api');
    register({ tsconfig });
    emitDecoratorMetadata(dir, tsconfig);
  } catch (error) {
    // Jest forbids module hooks, and its transform compiles every import already.
    if (/not supported in Jest/.test(describeError(error))) return;
    throw new TrellisError(
      'LoadFailed',
      `Cannot load TypeScript files: tsx is not available (${describeError(error)})`,
      {
        hint: 'Reinstall trellis (tsx is one of its dependencies), or build your plugins to JavaScript and use trellis.config.js or trellis.config.json',
      },
    );
  }
  registeredFor = tsconfig;
}

/**
 * Registers {@link ./decorator-metadata-loader.ts} after tsx (so its hooks run first) when
 * a `typescript` package can be found from `dir` (the project's) or from Trellis itself.
 * Without one, modules keep esbuild's output, and a constructor parameter without
 * `@inject(Token)` fails the install with a message saying what to write.
 */
function emitDecoratorMetadata(dir: string, tsconfig: string): void {
  const typescript = findTypeScript(dir);
  if (!typescript) return;
  registerHooks(new URL('./decorator-metadata-loader.js', import.meta.url), { data: { typescript, tsconfig } });
}

/** The `file:` URL of the `typescript` entry that `dir`'s project, else Trellis, would import. */
function findTypeScript(dir: string): string | undefined {
  for (const from of [join(dir, 'package.json'), join(trellisPackage().root, 'package.json')]) {
    try {
      return pathToFileURL(createRequire(from).resolve('typescript')).href;
    } catch {
      // Not installed there: try the next.
    }
  }
  return undefined;
}

/**
 * Refuses a tsconfig.json that plainly leaves legacy decorators off: esbuild would then
 * compile standard decorators, and Trellis's fail at run time with an unhelpful message.
 * A file that extends another, or that is not plain JSON with comments, is left to tsx.
 */
export function checkDecoratorSettings(file: string): void {
  let json: { extends?: unknown; compilerOptions?: { experimentalDecorators?: unknown } };
  try {
    json = JSON.parse(
      readFileSync(file, 'utf8')
        .replace(/\/\*[\s\S]*?\*\/|^\s*\/\/.*$/gm, '')
        .replace(/,(\s*[}\]])/g, '$1'),
    ) as typeof json;
  } catch {
    return;
  }
  if (json.extends !== undefined || json.compilerOptions?.experimentalDecorators === true) return;
  throw new TrellisError(
    'InvalidConfig',
    `${file} does not turn on legacy decorators, which Trellis's decorators (@Plugin, @Tool, @inject…) need`,
    {
      hint: 'Add "experimentalDecorators": true and "emitDecoratorMetadata": true to its compilerOptions (tsc reports the same problem as TS1240/TS1241; see docs/getting-started.md)',
    },
  );
}

/** Under ts-node or tsx, .ts files load already. */
function loadsTypeScriptAlready(): boolean {
  return process.execArgv.some((a) => /ts-node|tsx/.test(a));
}
