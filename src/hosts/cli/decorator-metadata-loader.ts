/**
 * Module hooks (`module.register`) that recompile the user's TypeScript modules with
 * TypeScript itself, so that decorators get their `design:paramtypes` metadata: esbuild,
 * which tsx compiles with, writes none, and constructor injection by type
 * (`constructor(private clock: Clock)`) would work under tsc and ts-jest but not in the
 * CLI. tsx still resolves every import and says which modules are ES modules; only the
 * source of an ES-module `.ts`/`.mts` file outside `node_modules` that holds a decorator is
 * replaced. Registered by {@link ./ts-loader.ts} after tsx; runs in Node's hooks thread,
 * so it imports nothing but Node and the TypeScript it is handed.
 */
import { readFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type * as TypeScript from 'typescript';

/** What `ts-loader` hands the hooks. */
export interface DecoratorMetadataData {
  /** The `file:` URL of the project's `typescript` package entry. */
  readonly typescript: string;
  /** The tsconfig.json whose compiler options apply. */
  readonly tsconfig: string;
}

type LoadResult = { format?: string | null; source?: unknown; shortCircuit?: boolean };
type NextLoad = (url: string, context?: unknown) => Promise<LoadResult>;

let data: DecoratorMetadataData | undefined;
/** TypeScript and the options to compile with, loaded on the first module that needs them; `null` when the tsconfig wants no metadata. */
let compiler:
  Promise<{ readonly ts: typeof TypeScript; readonly options: TypeScript.CompilerOptions } | null> | undefined;

/** Keeps where TypeScript and the tsconfig are; nothing is loaded until a module needs it. */
export function initialize(given: DecoratorMetadataData): void {
  data = given;
}

/** Lets tsx load the module, then recompiles an ES-module TypeScript file that has decorators. */
export async function load(url: string, context: unknown, nextLoad: NextLoad): Promise<LoadResult> {
  const loaded = await nextLoad(url, context);
  if (!data || (loaded.format !== 'module' && loaded.format !== 'module-typescript')) return loaded;
  const { protocol, pathname } = new URL(url);
  if (
    protocol !== 'file:' ||
    !/\.m?ts$/.test(pathname) ||
    pathname.endsWith('.d.ts') ||
    pathname.includes('/node_modules/')
  )
    return loaded;
  const file = fileURLToPath(`file://${pathname}`);
  const source = await readFile(file, 'utf8');
  if (!/@[A-Za-z_$]/.test(source)) return loaded;
  const ready = await (compiler ??= loadCompiler(data));
  if (!ready) return loaded;
  const { outputText } = ready.ts.transpileModule(source, { fileName: file, compilerOptions: ready.options });
  return { format: 'module', source: outputText, shortCircuit: true };
}

/** TypeScript, and the tsconfig's options (with `extends` followed) when they ask for decorator metadata. */
async function loadCompiler(
  from: DecoratorMetadataData,
): Promise<{ readonly ts: typeof TypeScript; readonly options: TypeScript.CompilerOptions } | null> {
  const loaded = (await import(from.typescript)) as { default?: typeof TypeScript } & typeof TypeScript;
  const ts = loaded.default ?? loaded;
  const read = ts.readConfigFile(from.tsconfig, ts.sys.readFile);
  if (read.error) return null;
  // Only the options: a host that lists no files, so no `include` (the fallback tsconfig's is "/**/*") walks the disk.
  const host = { ...ts.sys, readDirectory: () => [] };
  const parsed = ts.parseJsonConfigFileContent(read.config, host, dirname(from.tsconfig), undefined, from.tsconfig);
  if (!parsed.options.experimentalDecorators || !parsed.options.emitDecoratorMetadata) return null;
  // The module is loaded as an ES module already (tsx said so): emit one, with a map for stack traces.
  const options = {
    ...parsed.options,
    module: ts.ModuleKind.ESNext,
    moduleResolution: undefined,
    isolatedModules: true,
    noEmit: false,
    declaration: false,
    sourceMap: false,
    inlineSourceMap: true,
    inlineSources: true,
  };
  return { ts, options };
}
