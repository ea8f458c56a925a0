import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, extname, join } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  TrellisError,
  type AgentSpec,
  type Approver,
  type ModelProvider,
  type PluginClass,
  type Provider,
} from '../../../index.js';
import { isModelProvider } from '../../../models.js';
import type { ApprovalSettings } from '../../../governance.js';
import type { EvalDtos, Scorer } from '../../../eval.js';
import type { McpServerSpec } from '../../../mcp.js';
import { describeError } from './cli-errors.js';
import { moduleLoadHint } from './module-load-hint.js';
import { enableTypeScriptImports } from './ts-loader.js';

/** Looked for in the working directory, in this order; the first found wins. */
export const CONFIG_FILES = [
  'trellis.config.ts',
  'trellis.config.js',
  'trellis.config.mjs',
  'trellis.config.json',
] as const;

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
  /**
   * The agent: name, instructions, maxRounds and the plugins it uses (default: all); from a
   * .ts/.js config also `output`, the DTO class of a typed answer (`trellis run --json` prints
   * it as `output`), and `maxOutputRepairs`.
   */
  readonly agent?: Partial<
    Pick<AgentSpec, 'name' | 'instructions' | 'maxRounds' | 'plugins' | 'output' | 'maxOutputRepairs'>
  >;
  /** A model name, used with the API key found in the environment; or, from a .ts/.js config, a `ModelProvider`. */
  readonly model?: string | ModelProvider;
  /**
   * The session store: a SQLite file path (default `.trellis/trellis.db`), or a PostgreSQL
   * URL (`postgres://user:password@host:5432/db`) for many instances sharing sessions.
   */
  readonly store?: string;
  /** The schema of a PostgreSQL store. Default `trellis`. */
  readonly storeSchema?: string;
  /**
   * The turn queue `trellis worker` serves: a Redis URL (`redis://host:6379`), or
   * `{ url, name?, prefix? }` (name: the queue, default `turns`; prefix of Redis keys, default `trellis`).
   */
  readonly queue?: string | { readonly url: string; readonly name?: string; readonly prefix?: string };
  /** Session context (`app.*` keys) every session gets: `agent.session(id, { context })`. */
  readonly context?: Readonly<Record<string, unknown>>;
  /** Services for plugins to inject (`Trellis.create({ providers })`); .ts/.js configs only. */
  readonly providers?: readonly Provider[];
  /** MCP servers whose tools become plugins named after them (docs/mcp.md). A stdio server's `cwd` defaults to the config's folder. */
  readonly mcpServers?: Readonly<Record<string, McpServerSpec>>;
  /**
   * Who decides when this CLI approves or rejects a call (`trellis resume`, `trellis chat`):
   * the approver approval policies check and the audit log records. Default: the operating
   * system's user, as `os:<name>`, with no roles.
   */
  readonly identity?: Approver;
  /** Approval policies (`Trellis.create({ approvals })`): who may decide which calls. See docs/governance.md. */
  readonly approvals?: ApprovalSettings;
  /** What `trellis eval` scores with besides the built-in scorers; .ts/.js configs only. See docs/evals.md. */
  readonly eval?: CliEvalConfig;
}

/** The `eval` part of a config. */
export interface CliEvalConfig {
  /** class-validator DTOs that datasets name in `expected.dto`. */
  readonly dtos?: EvalDtos;
  /** More scorers, run on every case they apply to. */
  readonly scorers?: readonly Scorer[];
  /** The LLM-as-judge model for cases with a `rubric` (`--judge-model` names one from the environment instead). */
  readonly judge?: ModelProvider;
  /** The lowest judge score that passes. Default 0.7. */
  readonly judgePassAt?: number;
}

/** A config file found and checked. */
export interface LoadedConfig {
  readonly file: string;
  /** Relative paths in the config resolve from here. */
  readonly dir: string;
  readonly config: CliConfig;
}

const FIELDS = [
  'plugins',
  'agent',
  'model',
  'store',
  'storeSchema',
  'queue',
  'context',
  'providers',
  'mcpServers',
  'identity',
  'approvals',
  'eval',
];
const EVAL_FIELDS = ['dtos', 'scorers', 'judge', 'judgePassAt'];
const ENTRY_FIELDS = ['path', 'module', 'plugin', 'config'];
const AGENT_FIELDS = ['name', 'instructions', 'maxRounds', 'plugins', 'output', 'maxOutputRepairs'];

/**
 * Why no config was found in `cwd`: none there, or a file whose name is close to one
 * (`trellis.config.yaml`, `trellis.json`…) that the CLI does not read.
 */
export function missingConfigNote(cwd: string): string {
  const near = readdirSync(cwd).filter(
    (name) =>
      /^trellis[._-]?config|^trellis\.(json|ya?ml|[cm]?[jt]s)$/i.test(name) &&
      !(CONFIG_FILES as readonly string[]).includes(name),
  );
  const names = 'trellis.config.{ts,js,mjs,json}';
  if (near.length === 0) return `no ${names} in ${cwd}`;
  return `no ${names} in ${cwd} (${near.join(', ')} ${near.length === 1 ? 'is not a name' : 'are not names'} the CLI reads)`;
}

/** Finds and reads the config file in `cwd`; `undefined` when there is none. */
export async function loadCliConfig(cwd: string): Promise<LoadedConfig | undefined> {
  const file = CONFIG_FILES.map((name) => join(cwd, name)).find((path) => existsSync(path));
  if (!file) return undefined;
  const raw = await readConfig(file);
  return { file, dir: dirname(file), config: checkConfig(raw, file, await mcpServerProblems(raw)) };
}

/** The problems of each `mcpServers` entry; `trellis/mcp` (and the MCP SDK with it) loads only for a config that has some. */
async function mcpServerProblems(raw: unknown): Promise<string[]> {
  const servers = isPlainObject(raw) ? raw.mcpServers : undefined;
  if (!isPlainObject(servers) || Object.keys(servers).length === 0) return [];
  const { mcpSpecProblems } = await import('../../../mcp.js');
  return Object.entries(servers).flatMap(([name, spec]) => mcpSpecProblems(name, spec));
}

async function readConfig(file: string): Promise<unknown> {
  try {
    if (extname(file) === '.json') return JSON.parse(readFileSync(file, 'utf8')) as unknown;
    if (extname(file) === '.ts') await enableTypeScriptImports(dirname(file));
    const module = (await import(pathToFileURL(file).href)) as { default?: unknown };
    const value = module.default;
    return typeof value === 'function' ? await (value as () => unknown)() : value;
  } catch (error) {
    if (TrellisError.is(error)) throw error;
    throw new TrellisError('InvalidConfig', `Cannot read ${file}: ${describeError(error).replace(/\.$/, '')}`, {
      hint: moduleLoadHint(error, file) ?? 'Fix the file; a .ts or .js config default-exports the config object',
    });
  }
}

function checkConfig(raw: unknown, file: string, mcpProblems: readonly string[]): CliConfig {
  const problems: string[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw))
    throw invalid(file, ['it must hold an object (a .ts/.js config default-exports it)']);
  const config = raw as Record<string, unknown>;
  for (const key of Object.keys(config))
    if (!FIELDS.includes(key)) problems.push(`unknown field '${key}' (known: ${FIELDS.join(', ')})`);
  const { plugins, agent, model, store, storeSchema, queue, context, providers, mcpServers, identity, approvals } =
    config;
  problems.push(...evalProblems(config.eval, file));
  if (
    identity !== undefined &&
    !(
      isPlainObject(identity) &&
      typeof identity.id === 'string' &&
      identity.id.length > 0 &&
      (identity.roles === undefined ||
        (Array.isArray(identity.roles) && identity.roles.every((r) => typeof r === 'string')))
    )
  ) {
    problems.push('identity must be { "id": "alice@example.com", "roles": ["finance"] } (roles optional)');
  }
  if (
    approvals !== undefined &&
    !(isPlainObject(approvals) && (approvals.policies === undefined || Array.isArray(approvals.policies)))
  )
    problems.push('approvals must be { "policies": [ { "tools": [...], "roles": [...], "quorum": 2 } ] }');
  if (mcpServers !== undefined) {
    if (!isPlainObject(mcpServers))
      problems.push('mcpServers must be an object: { name: { command, args, env } | { url, headers } }');
    else problems.push(...mcpProblems);
  }
  if (plugins !== undefined && typeof plugins !== 'string') {
    if (!Array.isArray(plugins)) problems.push('plugins must be a directory path or a list of plugin entries');
    else plugins.forEach((entry, i) => problems.push(...entryProblems(entry, `plugins[${i}]`)));
  }
  if (agent !== undefined) {
    if (typeof agent !== 'object' || agent === null || Array.isArray(agent)) problems.push('agent must be an object');
    else {
      for (const key of Object.keys(agent))
        if (!AGENT_FIELDS.includes(key))
          problems.push(`unknown field 'agent.${key}' (known: ${AGENT_FIELDS.join(', ')})`);
      const output = (agent as { output?: unknown }).output;
      if (output !== undefined && (typeof output !== 'function' || extname(file) === '.json'))
        problems.push('agent.output must be a DTO class, given in a .ts or .js config');
    }
  }
  if (model !== undefined && typeof model !== 'string' && !isModelProvider(model))
    problems.push('model must be a model name or a ModelProvider');
  if (store !== undefined && typeof store !== 'string') problems.push('store must be a file path or a postgres:// URL');
  if (storeSchema !== undefined && (typeof storeSchema !== 'string' || !isPostgresUrl(store)))
    problems.push('storeSchema must be a schema name, and only goes with a postgres:// store');
  problems.push(...queueProblems(queue));
  if (context !== undefined && !isPlainObject(context))
    problems.push('context must be an object of context keys and values, e.g. { "app.locale": "en" }');
  if (providers !== undefined) {
    if (extname(file) === '.json')
      problems.push('providers can only be given in a .ts or .js config (they are classes or objects with functions)');
    else if (!Array.isArray(providers))
      problems.push('providers must be a list of classes or { provide, useValue | useClass | useFactory }');
    else {
      providers.forEach((p, i) => {
        const ok =
          typeof p === 'function' ||
          (isPlainObject(p) && 'provide' in p && ('useValue' in p || 'useClass' in p || 'useFactory' in p));
        if (!ok) problems.push(`providers[${i}] must be a class or { provide, useValue | useClass | useFactory }`);
      });
    }
  }
  if (problems.length > 0) throw invalid(file, problems);
  return config;
}

function evalProblems(value: unknown, file: string): string[] {
  if (value === undefined) return [];
  if (extname(file) === '.json')
    return ['eval can only be given in a .ts or .js config (it holds classes, scorers and models)'];
  if (!isPlainObject(value)) return ['eval must be an object: { dtos?, scorers?, judge?, judgePassAt? }'];
  const problems = Object.keys(value)
    .filter((key) => !EVAL_FIELDS.includes(key))
    .map((key) => `unknown field 'eval.${key}' (known: ${EVAL_FIELDS.join(', ')})`);
  const { dtos, scorers, judge, judgePassAt } = value;
  if (dtos !== undefined && !(isPlainObject(dtos) && Object.values(dtos).every((d) => typeof d === 'function')))
    problems.push('eval.dtos must map names to class-validator DTO classes');
  if (
    scorers !== undefined &&
    !(
      Array.isArray(scorers) &&
      scorers.every(
        (s) =>
          isPlainObject(s) &&
          typeof s.name === 'string' &&
          typeof s.applies === 'function' &&
          typeof s.score === 'function',
      )
    )
  )
    problems.push('eval.scorers must be a list of { name, applies(case), score(observation) }');
  if (judge !== undefined && !isModelProvider(judge)) problems.push('eval.judge must be a ModelProvider');
  if (judgePassAt !== undefined && !(typeof judgePassAt === 'number' && judgePassAt >= 0 && judgePassAt <= 1))
    problems.push('eval.judgePassAt must be a number from 0 to 1');
  return problems;
}

/** Whether a `store` value names a PostgreSQL server rather than a SQLite file. */
export function isPostgresUrl(store: unknown): store is string {
  return typeof store === 'string' && /^postgres(ql)?:\/\//.test(store);
}

function queueProblems(queue: unknown): string[] {
  if (queue === undefined) return [];
  const url = typeof queue === 'string' ? queue : isPlainObject(queue) ? queue.url : undefined;
  const problems =
    typeof url === 'string' && /^rediss?:\/\//.test(url)
      ? []
      : ['queue must be a redis:// URL, or { url: "redis://…", name?, prefix? }'];
  if (isPlainObject(queue)) {
    for (const key of Object.keys(queue))
      if (!['url', 'name', 'prefix'].includes(key))
        problems.push(`unknown field 'queue.${key}' (known: url, name, prefix)`);
    for (const key of ['name', 'prefix'] as const)
      if (queue[key] !== undefined && typeof queue[key] !== 'string') problems.push(`queue.${key} must be a string`);
  }
  return problems;
}

function entryProblems(entry: unknown, where: string): string[] {
  if (typeof entry === 'string' || typeof entry === 'function') return [];
  const shape = `${where} must be a module path, a plugin class, or { path | module | plugin, config }`;
  if (!isPlainObject(entry)) return [shape];
  const problems = Object.keys(entry)
    .filter((key) => !ENTRY_FIELDS.includes(key))
    .map((key) => `unknown field '${where}.${key}' (known: ${ENTRY_FIELDS.join(', ')})`);
  const given = ['path', 'module', 'plugin'].filter((key) => entry[key] !== undefined);
  if (given.length !== 1)
    problems.push(
      `${where} needs exactly one of path, module or plugin${given.length > 1 ? ` (got ${given.join(', ')})` : ''}`,
    );
  if (entry.path !== undefined && typeof entry.path !== 'string') problems.push(`${where}.path must be a module path`);
  if (entry.module !== undefined && typeof entry.module !== 'string')
    problems.push(`${where}.module must be a module path or package name`);
  if (entry.plugin !== undefined && typeof entry.plugin !== 'function')
    problems.push(`${where}.plugin must be a plugin class (in a .ts or .js config)`);
  return problems;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function invalid(file: string, problems: readonly string[]): TrellisError {
  const list = problems.length === 1 ? ` ${problems[0]}` : `\n${problems.map((p) => `  - ${p}`).join('\n')}`;
  return new TrellisError('InvalidConfig', `${file} is invalid:${list}`, { hint: 'See docs/cli.md for the fields' });
}
