import { readdirSync, statSync } from 'node:fs';
import { dirname, extname, join, resolve } from 'node:path';
import { pino } from 'pino';
import { createDeskApp, DESK_AGENT } from '../../examples/sql-report-desk/desk-app.js';
import { deskScriptedModel } from '../../examples/sql-report-desk/desk-model.js';
import type { Agent } from '../agent/agent.js';
import type { AgentSpec } from '../agent/agent-spec.js';
import { Trellis } from '../app/trellis.js';
import { TrellisError } from '../errors/trellis-error.js';
import type { ModelProvider } from '../models/model-provider.js';
import { importPlugins } from '../plugin/directory-loader.js';
import { DEFAULT_SQLITE_PATH, SqliteStore } from '../stores/sqlite-store.js';
import { createLogger, TRELLIS_LOGGER } from '../../plugins/middleware/logger.js';
import { loadCliConfig, type LoadedConfig } from './cli-config.js';
import type { CliIo } from './cli-io.js';
import { modelFromEnv } from './model-from-env.js';
import { enableTypeScriptImports } from './ts-loader.js';

/** The app the CLI runs: from `trellis.config.*`, or the SQL report desk example when there is none. */
export interface CliApp {
  readonly app: Trellis;
  /** The agent spec without its model. */
  readonly spec: Omit<AgentSpec, 'model'>;
  readonly storePath: string;
  /** The config file, or `undefined` when the example is used. */
  readonly configFile: string | undefined;
  readonly config: LoadedConfig | undefined;
}

/** Opens the app and its SQLite store (created when missing). Tool-call logs go to `<store dir>/logs/trellis.log`. */
export async function openCliApp(io: CliIo): Promise<CliApp> {
  const loaded = await loadCliConfig(io.cwd, io.env);
  const storePath = storePathOf(io, loaded);
  const logFile = join(dirname(storePath), 'logs', 'trellis.log');
  const store = SqliteStore.open(storePath);
  if (!loaded) {
    const home = dirname(storePath);
    const app = await createDeskApp({ store, logFile, databasePath: join(home, 'sql-report-desk.db'), exportDir: join(home, 'exports') });
    return { app, spec: DESK_AGENT, storePath, configFile: undefined, config: undefined };
  }
  const logger = createLogger({ destination: pino.destination({ dest: logFile, mkdir: true, sync: true }) });
  const app = Trellis.create({ store, providers: [{ provide: TRELLIS_LOGGER, useValue: logger }] });
  try {
    await installPlugins(app, loaded, io.env);
  } catch (error) {
    await app.stop();
    throw error;
  }
  const agent = loaded.config.agent ?? {};
  const spec = {
    name: agent.name ?? 'trellis',
    instructions: agent.instructions ?? 'You are a helpful assistant. Use the tools you are given when they help.',
    ...(agent.maxRounds !== undefined ? { maxRounds: agent.maxRounds } : {}),
    ...(agent.plugins !== undefined ? { plugins: agent.plugins } : {}),
  };
  return { app, spec, storePath, configFile: loaded.file, config: loaded };
}

/**
 * The agent with its model: the config's `ModelProvider`, else one from the environment
 * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`; `TRELLIS_MODEL` or the config's model name),
 * else the example's scripted model — said plainly on stderr.
 */
export function openAgent(cli: CliApp, io: CliIo): Agent {
  return cli.app.agent({ ...cli.spec, model: chooseModel(cli, io) });
}

function chooseModel(cli: CliApp, io: CliIo): ModelProvider {
  const configured = cli.config?.config.model;
  if (configured !== undefined && typeof configured !== 'string') return configured;
  const fromEnv = modelFromEnv({ ...io.env, TRELLIS_MODEL: io.env.TRELLIS_MODEL || configured });
  if (fromEnv) {
    io.err(`trellis: model ${fromEnv.label}`);
    return fromEnv.model;
  }
  io.err("trellis: no OPENAI_API_KEY or ANTHROPIC_API_KEY is set, so this uses the SQL report desk's scripted model (offline, canned answers)");
  return deskScriptedModel();
}

async function installPlugins(app: Trellis, loaded: LoadedConfig, env: NodeJS.ProcessEnv): Promise<void> {
  const { plugins } = loaded.config;
  if (plugins === undefined) return;
  for (const entry of typeof plugins === 'string' ? [plugins] : plugins) {
    if (typeof entry === 'function') {
      await app.install(entry);
      continue;
    }
    const path = resolve(loaded.dir, entry);
    if (isDirectory(path)) {
      if (readdirSync(path).some((f) => /\.m?ts$/.test(f) && !f.endsWith('.d.ts'))) enableTypeScriptImports(env);
      const report = await app.loadDirectory(path);
      if (report.failed.length > 0) {
        throw new TrellisError('LoadFailed', `Plugins in ${path} failed to load: ${report.failed.map((f) => `${f.file}${f.plugin ? ` (${f.plugin})` : ''}: ${f.reason}`).join('; ')}`, {
          hint: `Fix them or take them out of ${loaded.file}`,
        });
      }
      continue;
    }
    if (/\.m?ts$/.test(extname(path))) enableTypeScriptImports(env);
    let classes;
    try {
      classes = await importPlugins(path);
    } catch (error) {
      throw new TrellisError('LoadFailed', `Cannot import plugin module ${path}: ${error instanceof Error ? error.message : String(error)}`, { hint: `Check the path in ${loaded.file}` });
    }
    if (classes.length === 0) throw new TrellisError('LoadFailed', `${path} exports no @Plugin class`, { hint: `Export the plugin class, or remove the module from ${loaded.file}` });
    for (const type of classes) await app.install(type);
  }
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    throw new TrellisError('LoadFailed', `Plugin path ${path} does not exist`, { hint: 'Fix the plugins entry of the config; paths are relative to the config file' });
  }
}

/** Runs `work` with the CLI's app and always stops the app (closing the store) afterwards. */
export async function withCliApp<T>(io: CliIo, work: (cli: CliApp) => Promise<T>): Promise<T> {
  const cli = await openCliApp(io);
  try {
    return await work(cli);
  } finally {
    await cli.app.stop();
  }
}

/** The store file the CLI uses: the config's `store`, else `.trellis/trellis.db`, from the working directory. */
export async function cliStorePath(io: CliIo): Promise<string> {
  return storePathOf(io, await loadCliConfig(io.cwd, io.env));
}

function storePathOf(io: CliIo, loaded: LoadedConfig | undefined): string {
  return loaded?.config.store ? resolve(loaded.dir, loaded.config.store) : resolve(io.cwd, DEFAULT_SQLITE_PATH);
}
