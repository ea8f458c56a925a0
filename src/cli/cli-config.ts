import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentSpec } from '../agent/agent-spec.js';
import { TrellisError } from '../errors/trellis-error.js';
import { isModelProvider, type ModelProvider } from '../models/model-provider.js';
import type { Provider } from '../app/providers.js';
import type { PluginClass } from '../plugin/plugin-definition.js';
import { mcpSpecProblems, type McpServerSpec } from '../mcp/client/mcp-server-spec.js';
import { describeError } from './cli-errors.js';
import { enableTypeScriptImports } from './ts-loader.js';

/** Looked for in the working directory, in this order; the first found wins. */
export const CONFIG_FILES = ['trellis.config.ts', 'trellis.config.js', 'trellis.config.mjs', 'trellis.config.json'] as const;

/**
 * One entry of a `plugins` list: a module path, a plugin class (.ts/.js config), or one of
 * those with the config handed to `app.install(Class, { config })`.
 */
export type CliPluginEntry =
  | string
  | PluginClass
  | { readonly path: string; readonly config?: unknown }
  | { readonly module: string; readonly config?: unknown }
  | { readonly plugin: PluginClass; readonly config?: unknown };

/**
 * `trellis.config.{ts,js,mjs,json}`: what the CLI runs. A `.ts`, `.js` or `.mjs` file
 * default-exports the object (or a function returning it).
 *
 * @example
 * // trellis.config.json
 * { "plugins": ["./plugins/greeter.js", { "path": "./plugins/weather.js", "config": { "units": "metric" } }],
 *   "agent": { "name": "support", "instructions": "Be brief." }, "context": { "app.locale": "en" }, "model": "gpt-4o-mini", "store": ".trellis/support.db" }
 */
export interface CliConfig {
  /**
   * A directory of plugin modules (`app.loadDirectory`), or a list of entries: module paths,
   * plugin classes, or `{ path | module | plugin, config }`. Paths are relative to the config file.
   */
  readonly plugins?: string | readonly CliPluginEntry[];
  /** The agent: name, instructions, maxRounds and the plugins it uses (default: all). */
  readonly agent?: Partial<Pick<AgentSpec, 'name' | 'instructions' | 'maxRounds' | 'plugins'>>;
  /** A model name, used with the API key found in the environment; or, from a .ts/.js config, a `ModelProvider`. */
  readonly model?: string | ModelProvider;
  /** The SQLite session store. Default `.trellis/trellis.db`. */
  readonly store?: string;
  /** Session context (`app.*` keys) every session gets: `agent.session(id, { context })`. */
  readonly context?: Readonly<Record<string, unknown>>;
  /** Services for plugins to inject (`Trellis.create({ providers })`); .ts/.js configs only. */
  readonly providers?: readonly Provider[];
  /** MCP servers whose tools become plugins named after them (docs/mcp.md). A stdio server's `cwd` defaults to the config's folder. */
  readonly mcpServers?: Readonly<Record<string, McpServerSpec>>;
}

/** A config file found and checked. */
export interface LoadedConfig {
  readonly file: string;
  /** Relative paths in the config resolve from here. */
  readonly dir: string;
  readonly config: CliConfig;
}

const FIELDS = ['plugins', 'agent', 'model', 'store', 'context', 'providers', 'mcpServers'];
const ENTRY_FIELDS = ['path', 'module', 'plugin', 'config'];
const AGENT_FIELDS = ['name', 'instructions', 'maxRounds', 'plugins'];

/** Finds and reads the config file in `cwd`; `undefined` when there is none. */
export async function loadCliConfig(cwd: string, env: NodeJS.ProcessEnv): Promise<LoadedConfig | undefined> {
  const file = CONFIG_FILES.map((name) => join(cwd, name)).find((path) => existsSync(path));
  if (!file) return undefined;
  const raw = await readConfig(file, env);
  return { file, dir: dirname(file), config: checkConfig(raw, file) };
}

async function readConfig(file: string, env: NodeJS.ProcessEnv): Promise<unknown> {
  try {
    if (extname(file) === '.json') return JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (extname(file) === '.ts') enableTypeScriptImports(env);
    const module = (await import(pathToFileURL(file).href)) as { default?: unknown };
    const value = module.default;
    return typeof value === 'function' ? await (value as () => unknown)() : value;
  } catch (error) {
    if (TrellisError.is(error)) throw error;
    throw new TrellisError('InvalidConfig', `Cannot read ${file}: ${describeError(error)}`, {
      hint: 'Fix the file; a .ts or .js config default-exports the config object',
    });
  }
}

function checkConfig(raw: unknown, file: string): CliConfig {
  const problems: string[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(file, ['it must hold an object (a .ts/.js config default-exports it)']);
  const config = raw as Record<string, unknown>;
  for (const key of Object.keys(config)) if (!FIELDS.includes(key)) problems.push(`unknown field '${key}' (known: ${FIELDS.join(', ')})`);
  const { plugins, agent, model, store, context, providers, mcpServers } = config;
  if (mcpServers !== undefined) {
    if (!isPlainObject(mcpServers)) problems.push('mcpServers must be an object: { name: { command, args, env } | { url, headers } }');
    else for (const [name, spec] of Object.entries(mcpServers)) problems.push(...mcpSpecProblems(name, spec));
  }
  if (plugins !== undefined && typeof plugins !== 'string') {
    if (!Array.isArray(plugins)) problems.push('plugins must be a directory path or a list of plugin entries');
    else plugins.forEach((entry, i) => problems.push(...entryProblems(entry, `plugins[${i}]`)));
  }
  if (agent !== undefined) {
    if (typeof agent !== 'object' || agent === null || Array.isArray(agent)) problems.push('agent must be an object');
    else for (const key of Object.keys(agent)) if (!AGENT_FIELDS.includes(key)) problems.push(`unknown field 'agent.${key}' (known: ${AGENT_FIELDS.join(', ')})`);
  }
  if (model !== undefined && typeof model !== 'string' && !isModelProvider(model)) problems.push('model must be a model name or a ModelProvider');
  if (store !== undefined && typeof store !== 'string') problems.push('store must be a file path');
  if (context !== undefined && !isPlainObject(context)) problems.push('context must be an object of context keys and values, e.g. { "app.locale": "en" }');
  if (providers !== undefined) {
    if (extname(file) === '.json') problems.push('providers can only be given in a .ts or .js config (they are classes or objects with functions)');
    else if (!Array.isArray(providers)) problems.push('providers must be a list of classes or { provide, useValue | useClass | useFactory }');
    else {
      providers.forEach((p, i) => {
        const ok = typeof p === 'function' || (isPlainObject(p) && 'provide' in p && ('useValue' in p || 'useClass' in p || 'useFactory' in p));
        if (!ok) problems.push(`providers[${i}] must be a class or { provide, useValue | useClass | useFactory }`);
      });
    }
  }
  if (problems.length > 0) throw invalid(file, problems);
  return config as CliConfig;
}

function entryProblems(entry: unknown, where: string): string[] {
  if (typeof entry === 'string' || typeof entry === 'function') return [];
  const shape = `${where} must be a module path, a plugin class, or { path | module | plugin, config }`;
  if (!isPlainObject(entry)) return [shape];
  const problems = Object.keys(entry)
    .filter((key) => !ENTRY_FIELDS.includes(key))
    .map((key) => `unknown field '${where}.${key}' (known: ${ENTRY_FIELDS.join(', ')})`);
  const given = ['path', 'module', 'plugin'].filter((key) => entry[key] !== undefined);
  if (given.length !== 1) problems.push(`${where} needs exactly one of path, module or plugin${given.length > 1 ? ` (got ${given.join(', ')})` : ''}`);
  if (entry.path !== undefined && typeof entry.path !== 'string') problems.push(`${where}.path must be a module path`);
  if (entry.module !== undefined && typeof entry.module !== 'string') problems.push(`${where}.module must be a module path or package name`);
  if (entry.plugin !== undefined && typeof entry.plugin !== 'function') problems.push(`${where}.plugin must be a plugin class (in a .ts or .js config)`);
  return problems;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(file: string, problems: readonly string[]): TrellisError {
  const list = problems.length === 1 ? ` ${problems[0]}` : `\n${problems.map((p) => `  - ${p}`).join('\n')}`;
  return new TrellisError('InvalidConfig', `${file} is invalid:${list}`, { hint: 'See docs/cli.md for the fields' });
}
