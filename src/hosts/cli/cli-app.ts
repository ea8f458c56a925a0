import { readdirSync, statSync } from 'node:fs';
import { userInfo } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, extname, isAbsolute, join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import {
  MemoryStore,
  modelFromEnv,
  PostgresStore,
  SqliteStore,
  Trellis,
  TrellisError,
  type Agent,
  type AgentSpec,
  type Approver,
  type ModelProvider,
  type PluginClass,
  type Session,
  type SessionStore,
} from '../../../index.js';
import { canKeepCredentials, canLogTurnEvents, DEFAULT_SQLITE_PATH, type StoredSession } from '../../../stores.js';
import { isPluginClass, parseSuspension, type SuspensionRecord } from '../../../host.js';
import { createLogger, TRELLIS_LOGGER } from '../../../plugins/middleware/index.js';
import { TurnEventRecorder } from '../dev/recording/turn-event-recorder.js';
import {
  isPostgresUrl,
  loadCliConfig,
  missingConfigNote,
  type CliPluginEntry,
  type LoadedConfig,
} from './cli-config.js';
import { describeError } from './cli-errors.js';
import type { CliIo } from './cli-io.js';
import { cliCommand } from './invocation.js';
import { moduleLoadHint } from './module-load-hint.js';
import { enableTypeScriptImports } from './ts-loader.js';

/** The app the CLI runs: from `trellis.config.*`, or the SQL report desk example when there is none. */
export interface CliApp {
  readonly app: Trellis;
  /** The session store the app was created with. */
  readonly store: SessionStore;
  /** The agent spec without its model. */
  readonly spec: Omit<AgentSpec, 'model'>;
  /** The SQLite file, or the PostgreSQL server (`host:port/db`, no password) the sessions live in. */
  readonly storePath: string;
  /** The config file, or `undefined` when the example is used. */
  readonly configFile: string | undefined;
  readonly config: LoadedConfig | undefined;
  /** Session context from the config's `context`, given to every session. */
  readonly context: Readonly<Record<string, unknown>>;
  /** Keeps each turn's events in the store, so `trellis dev` can draw turns run by any command. */
  readonly recorder: TurnEventRecorder;
  /** Running the example: its scripted model, for when no API key is set. */
  readonly exampleModel?: () => ModelProvider;
  /** Who decides the calls this CLI approves or rejects: the config's `identity`, else the OS user. */
  readonly approver: Approver;
}

/** How a command wants the app opened. */
export interface CliAppOptions {
  /** Keep sessions in memory instead of the config's store (`trellis eval`: throwaway sessions). */
  readonly memoryStore?: boolean;
}

/** Opens the app and its SQLite store (created when missing). Tool-call logs go to `<store dir>/logs/trellis.log`. */
export async function openCliApp(io: CliIo, options: CliAppOptions = {}): Promise<CliApp> {
  const loaded = await loadCliConfig(io.cwd);
  const storeUrl = loaded?.config.store;
  const postgres = isPostgresUrl(storeUrl);
  const storePath = postgres ? describePostgres(storeUrl) : storePathOf(io, loaded);
  const logFile = postgres
    ? resolve(io.cwd, '.trellis', 'logs', 'trellis.log')
    : join(dirname(storePath), 'logs', 'trellis.log');
  const store: SessionStore = options.memoryStore
    ? new MemoryStore()
    : postgres
      ? await PostgresStore.open({ url: storeUrl, schema: loaded?.config.storeSchema })
      : SqliteStore.open(storePath);
  if (!loaded) {
    // Loaded only when it runs: the example brings its own SQLite database (better-sqlite3),
    // which `--help` or a command on the user's own config must not load. One import after
    // the other: jest's ESM registry fails two concurrent ones that share a module (pino).
    const { createDeskApp, DESK_AGENT } = await import('../../../examples/sql-report-desk/desk-app.js');
    const { deskScriptedModel } = await import('../../../examples/sql-report-desk/desk-model.js');
    const home = dirname(storePath);
    const app = await createDeskApp({
      store,
      logFile,
      databasePath: join(home, 'sql-report-desk.db'),
      exportDir: join(home, 'exports'),
    });
    return {
      app,
      store,
      spec: DESK_AGENT,
      storePath,
      configFile: undefined,
      config: undefined,
      context: {},
      recorder: recordTurns(app, store, io),
      exampleModel: () => deskScriptedModel({ exportDir: join(home, 'exports') }),
      approver: cliApprover(undefined),
    };
  }
  // pino is loaded here, when a command opens the app: `--help` and `--version` do not load it.
  const { pino } = await import('pino');
  const logger = createLogger({ destination: pino.destination({ dest: logFile, mkdir: true, sync: true }) });
  let app: Trellis;
  try {
    app = Trellis.create({
      store,
      providers: [{ provide: TRELLIS_LOGGER, useValue: logger }, ...(loaded.config.providers ?? [])],
      ...(loaded.config.approvals !== undefined && { approvals: loaded.config.approvals }),
    });
  } catch (error) {
    await store.close();
    throw error;
  }
  const agent = loaded.config.agent ?? {};
  try {
    await installPlugins(app, loaded);
    await connectConfiguredMcpServers(app, loaded, agent.name ?? 'trellis', io, store);
  } catch (error) {
    await app.stop();
    throw error;
  }
  const spec = {
    name: agent.name ?? 'trellis',
    instructions: agent.instructions ?? 'You are a helpful assistant. Use the tools you are given when they help.',
    ...(agent.maxRounds !== undefined ? { maxRounds: agent.maxRounds } : {}),
    ...(agent.plugins !== undefined ? { plugins: agent.plugins } : {}),
    ...(agent.output !== undefined ? { output: agent.output } : {}),
    ...(agent.maxOutputRepairs !== undefined ? { maxOutputRepairs: agent.maxOutputRepairs } : {}),
  };
  return {
    app,
    store,
    spec,
    storePath,
    configFile: loaded.file,
    config: loaded,
    context: loaded.config.context ?? {},
    recorder: recordTurns(app, store, io),
    approver: cliApprover(loaded),
  };
}

/** The config's `identity`, else the operating system's user (`os:<name>`), with no roles. */
export function cliApprover(loaded: LoadedConfig | undefined): Approver {
  if (loaded?.config.identity) return loaded.config.identity;
  let name = 'unknown';
  try {
    name = userInfo().username;
  } catch {
    // No user entry for this uid (a container): the id says so.
  }
  return { id: `os:${name}` };
}

function recordTurns(app: Trellis, store: SessionStore, io: CliIo): TurnEventRecorder {
  return new TurnEventRecorder(app.events$, canLogTurnEvents(store) ? store : undefined, (error) =>
    io.err(`note: a turn's events were not recorded: ${describeError(error)}`),
  ).start();
}

/**
 * The agent with its model: the config's `ModelProvider`, else one from the environment
 * (`OPENAI_API_KEY`, `ANTHROPIC_API_KEY`; `TRELLIS_MODEL` or the config's model name).
 * Running the example (no config) without a key, the example's scripted model answers —
 * said plainly on stderr; with the user's own config and no model, this refuses. Running
 * the example, a note says so first, and where it writes.
 */
export function openAgent(cli: CliApp, io: CliIo, options: { readonly offline?: boolean } = {}): Agent {
  if (!cli.configFile) {
    io.err(
      `note: ${missingConfigNote(io.cwd)}; running the SQL report desk example, which writes its sessions, database, logs and exports under ${dirname(cli.storePath)} (${cliCommand(io)} init <dir> creates a project of your own)`,
    );
  }
  return cli.app.agent({ ...cli.spec, model: options.offline ? offlineModel(cli) : chooseModel(cli, io) });
}

/** `--offline`: the config's `ModelProvider` (a `ScriptedModel`, say) or the example's scripted model; never a provider's API. */
function offlineModel(cli: CliApp): ModelProvider {
  const configured = cli.config?.config.model;
  if (configured !== undefined && typeof configured !== 'string') return configured;
  if (cli.exampleModel) return cli.exampleModel();
  throw new TrellisError(
    'NoModel',
    `--offline runs without a model provider's API, and ${cli.configFile} names no model object to run with${configured ? ` (only the name '${configured}')` : ''}`,
    {
      hint: 'Set model in a .ts/.js config to a ModelProvider that answers offline (e.g. a ScriptedModel from trellis/testing), or leave out --offline',
    },
  );
}

/** A session of the agent, with the config's `context`. */
export function openSession(cli: CliApp, io: CliIo, id?: string): Session {
  return openAgent(cli, io).session(id, { context: cli.context });
}

function chooseModel(cli: CliApp, io: CliIo): ModelProvider {
  const configured = cli.config?.config.model;
  if (configured !== undefined && typeof configured !== 'string') return configured;
  const fromEnv = modelFromEnv(
    { ...io.env, TRELLIS_MODEL: io.env.TRELLIS_MODEL || configured },
    io.env.TRELLIS_MODEL ? 'TRELLIS_MODEL' : `the model of ${cli.configFile ?? 'trellis.config'}`,
  );
  if (fromEnv) {
    io.err(`note: model ${fromEnv.label}`);
    return fromEnv.model;
  }
  if (!cli.exampleModel) {
    throw new TrellisError(
      'NoModel',
      `No model to run with: neither OPENAI_API_KEY nor ANTHROPIC_API_KEY is set${configured ? ` (the config names '${configured}')` : ''}`,
      {
        hint: `Set OPENAI_API_KEY or ANTHROPIC_API_KEY, or set model in a .ts/.js config to a ModelProvider (e.g. a ScriptedModel)`,
      },
    );
  }
  io.err("note: no OPENAI_API_KEY or ANTHROPIC_API_KEY; using the example's scripted model (offline, canned answers)");
  return cli.exampleModel();
}

/** The calls a stored session waits for a decision on (tool and call id), or none. */
export async function waitingCalls(cli: CliApp, sessionId: string): Promise<{ callId: string; tool: string }[]> {
  const stored = await cli.store.load(sessionId);
  const record = stored && reviewedSuspension(stored);
  return (record?.pending ?? []).map((p) => ({ callId: p.callId, tool: p.tool }));
}

/**
 * A stored session's suspension as `session.resume` takes it, read from the store without
 * a model (a `--queue` turn runs on a worker): every pending call waits for a decision. A
 * decision recorded for a call still pending was claimed by a resume that stopped part-way;
 * after such a crash a call cut off mid-run waits for retry/skip and one that never started
 * waits to be carried out (the call journal), so that claim does not count as decided.
 */
export function reviewedSuspension(stored: StoredSession): SuspensionRecord | undefined {
  const record = parseSuspension(stored.suspension, stored.id);
  if (!record) return undefined;
  const pending = new Set(record.pending.map((p) => p.callId));
  return { ...record, decisions: record.decisions.filter((d) => !pending.has(d.callId)) };
}

async function installPlugins(app: Trellis, loaded: LoadedConfig): Promise<void> {
  const { plugins } = loaded.config;
  if (plugins === undefined) return;
  for (const entry of typeof plugins === 'string' ? [plugins] : plugins) await installEntry(app, loaded, entry);
}

/**
 * Each `mcpServers` entry becomes a plugin named after the server; a stdio server runs in the
 * config's folder unless it says otherwise. `trellis/mcp` (the MCP SDK) loads only for a config that has some.
 * OAuth tokens are kept in the config's store; a sign-in URL is printed to stderr. A server's question to a human (elicitation) waits as an approval of the config's agent, so
 * `trellis resume` answers it; where it waits is printed to stderr.
 */
async function connectConfiguredMcpServers(
  app: Trellis,
  loaded: LoadedConfig,
  agentName: string,
  io: CliIo,
  store: SessionStore,
): Promise<void> {
  const servers = Object.entries(loaded.config.mcpServers ?? {});
  if (servers.length === 0) return;
  const { McpServerClient, mcpTokensIn } = await import('../../../mcp.js');
  // OAuth tokens go to the config's store, so the next command (or another process) uses them.
  const tokenStore = canKeepCredentials(store) ? mcpTokensIn(store) : undefined;
  const onAuthorize = ({ server, url }: { server: string; url: string }) =>
    io.err(
      `note: MCP server '${server}' needs you to sign in: open ${url}\n  (Trellis waits for the browser to come back, up to 5 minutes)`,
    );
  const elicitation = {
    agentName,
    onParked: (p: {
      server: string;
      message: string;
      sessionId: string;
      callId: string;
      allowedDecisions: readonly string[];
    }) => {
      const resume = `${cliCommand(io)} resume ${p.sessionId}`;
      const approve = p.allowedDecisions.includes('approve') ? `${resume} --approve ${p.callId}, or ` : '';
      io.err(
        `note: MCP server '${p.server}' asks: ${p.message}\n  It waits as call ${p.callId} of session ${p.sessionId}. Answer with: ${approve}${resume} --edit '${p.callId}={…}', or --reject ${p.callId} (see ${cliCommand(io)} sessions show ${p.sessionId})`,
      );
    },
  };
  for (const [name, spec] of servers) {
    await McpServerClient.connect(
      app,
      name,
      'command' in spec ? { ...spec, cwd: resolve(loaded.dir, spec.cwd ?? '.') } : spec,
      { elicitation, onAuthorize, ...(tokenStore && { tokenStore }) },
    );
  }
}

async function installEntry(app: Trellis, loaded: LoadedConfig, entry: CliPluginEntry): Promise<void> {
  if (typeof entry === 'function') return installOne(app, loaded, entry, undefined, entry.name);
  const hasConfig = typeof entry === 'object' && 'config' in entry && entry.config !== undefined;
  const config = hasConfig ? (entry as { config: unknown }).config : undefined;
  if (typeof entry === 'object' && 'plugin' in entry)
    return installOne(app, loaded, entry.plugin, config, entry.plugin.name, hasConfig);
  const specifier = typeof entry === 'string' ? entry : 'path' in entry ? entry.path : entry.module;
  const isPackage = typeof entry === 'object' && 'module' in entry && !isPathLike(entry.module);
  const path = isPackage ? resolvePackage(specifier, loaded) : resolve(loaded.dir, specifier);
  if (!isPackage && isDirectory(path)) {
    if (hasConfig) {
      throw new TrellisError(
        'InvalidConfig',
        `The plugins entry ${specifier} is a directory, so its config has no one plugin to go to`,
        {
          hint: `Give the module's path instead, e.g. { "path": "${specifier}/weather.js", "config": … }, in ${loaded.file}`,
        },
      );
    }
    return installDirectory(app, loaded, path);
  }
  if (/\.m?ts$/.test(extname(path))) await enableTypeScriptImports(loaded.dir);
  let classes: PluginClass[];
  try {
    classes = await importPluginClasses(isPackage && !isAbsolute(path) ? path : pathToFileURL(path).href);
  } catch (error) {
    throw new TrellisError(
      'LoadFailed',
      `Cannot import plugin module ${path}: ${describeError(error).replace(/\.$/, '')}`,
      {
        hint: moduleLoadHint(error, path) ?? `Fix the module, or check its path in ${loaded.file}`,
      },
    );
  }
  if (classes.length === 0)
    throw new TrellisError('LoadFailed', `${path} exports no @Plugin class`, {
      hint: `Export the plugin class, or remove the module from ${loaded.file}`,
    });
  if (hasConfig && classes.length > 1) {
    throw new TrellisError(
      'InvalidConfig',
      `${path} exports ${classes.length} plugin classes (${classes.map((c) => c.name).join(', ')}), so its config has no one plugin to go to`,
      {
        hint: `Split the module, or in a .ts/.js config use { plugin: ${classes[0]!.name}, config } (${loaded.file})`,
      },
    );
  }
  for (const type of classes) await installOne(app, loaded, type, config, specifier, hasConfig);
}

/** `app.install(type, { config })`, with a config problem pointed at the config file rather than at `app.install`. */
async function installOne(
  app: Trellis,
  loaded: LoadedConfig,
  type: PluginClass,
  config: unknown,
  label: string,
  hasConfig = false,
): Promise<void> {
  try {
    await app.install(type, hasConfig ? { config } : {});
  } catch (error) {
    if (!TrellisError.is(error, 'InvalidConfig')) throw error;
    const message =
      error.hint && error.message.endsWith(`. ${error.hint}`)
        ? error.message.slice(0, -(error.hint.length + 2))
        : error.message;
    const hint = hasConfig
      ? `Fix its "config" in the plugins entry ${label} of ${loaded.file}`
      : `Add its "config" in ${loaded.file}: { "path": "${label}", "config": { … } }`;
    throw new TrellisError('InvalidConfig', message, {
      hint: /takes no config/.test(message)
        ? `Remove "config" from the plugins entry ${label} of ${loaded.file}`
        : hint,
      details: error.details,
      cause: error,
    });
  }
}

/** Every module's plugins through `app.loadDirectory`; any module or plugin that failed, or a folder with none, stops the CLI with its file and reason. */
async function installDirectory(app: Trellis, loaded: LoadedConfig, path: string): Promise<void> {
  if (readdirSync(path).some((f) => /\.m?ts$/.test(f) && !f.endsWith('.d.ts')))
    await enableTypeScriptImports(loaded.dir);
  const { installed, failed } = await app.loadDirectory(path);
  if (installed.length === 0 && failed.length === 0) {
    throw new TrellisError('LoadFailed', `No module in ${path} exports a @Plugin class, so there is nothing to run`, {
      hint: `Point "plugins" in ${loaded.file} at your plugin modules (paths are relative to the config file), or export the plugin classes`,
    });
  }
  if (failed.length > 0) {
    const lines = failed.map((f) => `${f.file}${f.plugin ? ` (${f.plugin})` : ''}: ${f.reason}`);
    throw new TrellisError(
      'LoadFailed',
      `Plugins in ${path} failed to load:\n${lines.map((l) => `  ${l}`).join('\n')}`,
      {
        hint: `Fix them or take them out of ${loaded.file}`,
      },
    );
  }
}

function isPathLike(specifier: string): boolean {
  return specifier.startsWith('.') || isAbsolute(specifier) || specifier.startsWith('file:');
}

/** A package name, resolved from the config's folder where possible (else left for `import` to find). */
function resolvePackage(name: string, loaded: LoadedConfig): string {
  try {
    return createRequire(loaded.file).resolve(name);
  } catch {
    return name;
  }
}

/** The `@Plugin` classes a module exports: a file URL, or a package name left for `import` to find. */
async function importPluginClasses(specifier: string): Promise<PluginClass[]> {
  const module = (await import(specifier)) as Record<string, unknown>;
  return [...new Set(Object.values(module).filter(isPluginClass))];
}

function isDirectory(path: string): boolean {
  try {
    return statSync(path).isDirectory();
  } catch {
    throw new TrellisError('LoadFailed', `Plugin path ${path} does not exist`, {
      hint: 'Fix the plugins entry of the config; paths are relative to the config file',
    });
  }
}

/** Runs `work` with the CLI's app and always stops the app (closing the store) afterwards. */
export async function withCliApp<T>(
  io: CliIo,
  work: (cli: CliApp) => Promise<T>,
  options: CliAppOptions = {},
): Promise<T> {
  const cli = await openCliApp(io, options);
  try {
    return await work(cli);
  } finally {
    await cli.recorder.stop();
    await cli.app.stop();
  }
}

/** Where the config's store is: a SQLite file, or a PostgreSQL server and schema (`where` never shows a password). */
export type CliStoreTarget =
  | { readonly kind: 'sqlite'; readonly path: string; readonly where: string }
  | { readonly kind: 'postgres'; readonly url: string; readonly schema: string | undefined; readonly where: string };

/** The config's store, for commands that open it without the app (`trellis audit`, `doctor`, `sessions`). */
export async function cliStoreTarget(io: CliIo): Promise<CliStoreTarget> {
  const loaded = await loadCliConfig(io.cwd);
  const url = loaded?.config.store;
  if (isPostgresUrl(url))
    return { kind: 'postgres', url, schema: loaded?.config.storeSchema, where: describePostgres(url) };
  const path = storePathOf(io, loaded);
  return { kind: 'sqlite', path, where: path };
}

/** `postgres://host:port/db` without user or password, for messages. */
function describePostgres(url: string): string {
  try {
    const parsed = new URL(url);
    return `postgres://${parsed.host}${parsed.pathname}`;
  } catch {
    return 'postgres://(unparseable URL)';
  }
}

function storePathOf(io: CliIo, loaded: LoadedConfig | undefined): string {
  return loaded?.config.store ? resolve(loaded.dir, loaded.config.store) : resolve(io.cwd, DEFAULT_SQLITE_PATH);
}
