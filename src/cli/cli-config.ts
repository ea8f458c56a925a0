import { existsSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import type { AgentSpec } from '../agent/agent-spec.js';
import { TrellisError } from '../errors/trellis-error.js';
import { isModelProvider, type ModelProvider } from '../models/model-provider.js';
import type { PluginClass } from '../plugin/plugin-definition.js';
import { enableTypeScriptImports } from './ts-loader.js';

/** Looked for in the working directory, in this order; the first found wins. */
export const CONFIG_FILES = ['trellis.config.ts', 'trellis.config.js', 'trellis.config.mjs', 'trellis.config.json'] as const;

/**
 * `trellis.config.{ts,js,json}`: what the CLI runs. A `.ts` or `.js` file default-exports
 * the object (or a function returning it).
 *
 * @example
 * // trellis.config.json
 * { "plugins": "./plugins", "agent": { "name": "support", "instructions": "Be brief." }, "model": "gpt-4o-mini", "store": ".trellis/support.db" }
 */
export interface CliConfig {
  /** A directory of plugin modules (`app.loadDirectory`), or a list of modules and plugin classes. Paths are relative to the config file. */
  readonly plugins?: string | readonly (string | PluginClass)[];
  /** The agent: name, instructions, maxRounds and the plugins it uses (default: all). */
  readonly agent?: Partial<Pick<AgentSpec, 'name' | 'instructions' | 'maxRounds' | 'plugins'>>;
  /** A model name, used with the API key found in the environment; or, from a .ts/.js config, a `ModelProvider`. */
  readonly model?: string | ModelProvider;
  /** The SQLite session store. Default `.trellis/trellis.db`. */
  readonly store?: string;
}

/** A config file found and checked. */
export interface LoadedConfig {
  readonly file: string;
  /** Relative paths in the config resolve from here. */
  readonly dir: string;
  readonly config: CliConfig;
}

const FIELDS = ['plugins', 'agent', 'model', 'store'];
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
    throw new TrellisError('InvalidConfig', `Cannot read ${file}: ${error instanceof Error ? error.message : String(error)}`, {
      hint: 'Fix the file; a .ts or .js config default-exports the config object',
    });
  }
}

function checkConfig(raw: unknown, file: string): CliConfig {
  const problems: string[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw invalid(file, ['it must hold an object (a .ts/.js config default-exports it)']);
  const config = raw as Record<string, unknown>;
  for (const key of Object.keys(config)) if (!FIELDS.includes(key)) problems.push(`unknown field '${key}' (known: ${FIELDS.join(', ')})`);
  const { plugins, agent, model, store } = config;
  if (plugins !== undefined && typeof plugins !== 'string' && !(Array.isArray(plugins) && plugins.every((p) => typeof p === 'string' || typeof p === 'function'))) {
    problems.push('plugins must be a directory path or a list of module paths (or plugin classes)');
  }
  if (agent !== undefined) {
    if (typeof agent !== 'object' || agent === null || Array.isArray(agent)) problems.push('agent must be an object');
    else for (const key of Object.keys(agent)) if (!AGENT_FIELDS.includes(key)) problems.push(`unknown field 'agent.${key}' (known: ${AGENT_FIELDS.join(', ')})`);
  }
  if (model !== undefined && typeof model !== 'string' && !isModelProvider(model)) problems.push('model must be a model name or a ModelProvider');
  if (store !== undefined && typeof store !== 'string') problems.push('store must be a file path');
  if (problems.length > 0) throw invalid(file, problems);
  return config as CliConfig;
}

function invalid(file: string, problems: readonly string[]): TrellisError {
  return new TrellisError('InvalidConfig', `${file} is invalid: ${problems.join('; ')}`, { hint: 'See docs/cli.md for the fields' });
}
