import { readdir } from 'node:fs/promises';
import { extname, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { isPluginClass } from './plugin-explorer.js';
import type { PluginClass } from './plugin-definition.js';

const MODULE_EXTENSIONS = new Set(['.js', '.mjs', '.ts', '.mts']);

/** What `app.loadDirectory` did: plugins installed, and modules or plugins that failed, with why. */
export interface LoadReport {
  readonly installed: readonly { readonly file: string; readonly plugin: string }[];
  readonly failed: readonly { readonly file: string; readonly plugin?: string; readonly reason: string }[];
}

/** The module files of a directory, in name order (declarations, tests and maps skipped). */
export async function pluginModules(dir: string): Promise<string[]> {
  const entries = await readdir(resolve(dir), { withFileTypes: true });
  return entries
    .filter((e) => e.isFile() && MODULE_EXTENSIONS.has(extname(e.name)) && !/\.(d|spec|test)\.[mc]?[jt]s$/.test(e.name))
    .map((e) => join(resolve(dir), e.name))
    .sort();
}

/** Imports a module and returns its exported `@Plugin` classes. */
export async function importPlugins(file: string): Promise<PluginClass[]> {
  const module = (await import(pathToFileURL(file).href)) as Record<string, unknown>;
  return [...new Set(Object.values(module).filter(isPluginClass))];
}
