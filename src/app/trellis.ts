import { describeError } from '../errors/describe-error.js';
import 'reflect-metadata';
import { Container } from 'inversify';
import type { Observable } from 'rxjs';
import { ContextScope } from '../context/context-scope.js';
import { TrellisError } from '../errors/trellis-error.js';
import { EventBus } from '../events/event-bus.js';
import type { TrellisEvent } from '../events/trellis-event.js';
import { HookEngine, type HookRun } from '../hooks/hook-engine.js';
import { importPlugins, pluginModules, type LoadReport } from '../plugin/directory-loader.js';
import type { InstalledPlugin } from '../plugin/installed-plugin.js';
import { buildMiddleware, validateMiddlewareOptions, type BuiltMiddleware } from '../plugin/middleware-factory.js';
import type { PluginClass } from '../plugin/plugin-definition.js';
import { explorePlugin } from '../plugin/plugin-explorer.js';
import { preparePlugin, type InstallOptions } from '../plugin/plugin-installer.js';
import { RegistrySnapshot } from '../plugin/registry-snapshot.js';
import { SessionState } from '../state/session-state.js';
import { StateEngine } from '../state/state-engine.js';
import { SESSION_STORE, type SessionStore } from '../stores/session-store.js';
import type { MiddlewareDeclaration } from '../tools/tool-middleware.js';
import { bindProviders, type Provider } from './providers.js';
import { Agent } from '../agent/agent.js';
import type { AgentSpec } from '../agent/agent-spec.js';
import type { PluginLifecycle } from './plugin-lifecycle.js';
import type { SelfTestReport } from './self-test-report.js';

export interface TrellisOptions {
  /** Services plugins and middleware may inject. */
  readonly providers?: readonly Provider[];
  /** App-wide tool middleware, outermost around every tool. */
  readonly middleware?: readonly MiddlewareDeclaration[];
  /** Where sessions are kept between turns. */
  readonly store?: SessionStore;
  /** Run `app.heartbeat` hooks this often once started. */
  readonly heartbeatMs?: number;
}

/** DI token under which the app binds itself. */
export const TRELLIS_APP = Symbol.for('trellis.app');
const APP_SESSION = '(app)';

/**
 * The kernel: DI container, plugin registry, hook engine, state engine and event stream.
 *
 * @example
 * const app = Trellis.create({ providers: [OrdersRepo] });
 * await app.install(OrdersPlugin, { config: { region: 'eu' } });
 * await app.start();
 */
export class Trellis {
  readonly container = new Container();
  readonly bus = new EventBus();
  /** Every event the app and its sessions emit. */
  readonly events$: Observable<TrellisEvent> = this.bus.events$;
  readonly stateEngine = new StateEngine(this.bus);
  readonly hooks = new HookEngine(this.stateEngine, this.bus);
  readonly store: SessionStore | undefined;
  private current = new RegistrySnapshot([]);
  private readonly appMiddleware: readonly BuiltMiddleware[];
  private readonly appState = new SessionState(APP_SESSION, this.bus);
  private readonly sessions = new Map<string, SessionState>();
  private mutation: Promise<unknown> = Promise.resolve();
  private seq = 0;
  private heartbeat: NodeJS.Timeout | undefined;
  private phase: 'created' | 'started' | 'stopped' = 'created';

  private constructor(private readonly options: TrellisOptions) {
    this.store = options.store;
    this.container.bind(EventBus).toConstantValue(this.bus);
    this.container.bind(TRELLIS_APP).toConstantValue(this);
    if (options.store) this.container.bind(SESSION_STORE).toConstantValue(options.store);
    bindProviders(this.container, options.providers ?? []);
    this.appMiddleware = (options.middleware ?? []).map((d) => buildMiddleware(d, validateMiddlewareOptions(d, 'Trellis.create middleware'), this.container));
  }

  static create(options: TrellisOptions = {}): Trellis {
    if (options.heartbeatMs !== undefined && !(options.heartbeatMs > 0)) {
      throw new TrellisError('InvalidOptions', `heartbeatMs must be a positive number of milliseconds, got ${options.heartbeatMs}`, { hint: 'Pass e.g. heartbeatMs: 30000, or leave it out' });
    }
    return new Trellis(options);
  }

  /** The installed plugins right now; a turn keeps the snapshot it started with. */
  get registry(): RegistrySnapshot {
    return this.current;
  }

  /**
   * Validates and installs a plugin class. Throws a `TrellisError` (and registers nothing)
   * on a duplicate name, a clash of tool / state / effect / action names, a missing
   * dependency, invalid config or middleware options, or a failing `onInstall`.
   */
  install(type: PluginClass, options: InstallOptions = {}): Promise<InstalledPlugin> {
    return this.serialize(async () => {
      const definition = explorePlugin(type);
      const plugin = preparePlugin(definition, options, this.current, { container: this.container, appMiddleware: this.appMiddleware, seq: ++this.seq });
      await this.lifecycle(plugin, 'onInstall');
      this.publish([...this.current.plugins, plugin]);
      this.bus.emit({ type: 'plugin.installed', plugin: definition.name, version: definition.version });
      return plugin;
    });
  }

  /** Removes every behavioural part of a plugin and clears its state keys (unless retained). */
  uninstall(name: string): Promise<void> {
    return this.serialize(async () => {
      const plugin = this.plugin(name);
      const dependents = this.current.plugins.filter((p) => p.definition.dependsOn.includes(name)).map((p) => p.definition.name);
      if (dependents.length > 0) {
        throw new TrellisError('DependentPlugin', `Cannot uninstall '${name}': ${dependents.map((d) => `'${d}'`).join(', ')} depend${dependents.length === 1 ? 's' : ''} on it`, {
          hint: `Uninstall ${dependents.join(', ')} first`,
          details: { plugin: name, dependents },
        });
      }
      await this.lifecycle(plugin, 'onUninstall');
      this.publish(this.current.plugins.filter((p) => p !== plugin));
      const cleared = plugin.stateKeys.filter((k) => !k.retainOnUninstall).map((k) => k.key);
      this.appState.clear(cleared);
      for (const state of this.sessions.values()) state.clear(cleared);
      await plugin.container.unbindAllAsync();
      this.bus.emit({ type: 'plugin.uninstalled', plugin: name });
    });
  }

  /**
   * Swaps a plugin for a new version in one step: turns that start afterwards see only the
   * new one, turns already running keep the old. State keys are kept.
   */
  reload(name: string, type: PluginClass, options: InstallOptions = {}): Promise<InstalledPlugin> {
    return this.serialize(async () => {
      const old = this.plugin(name);
      const definition = explorePlugin(type);
      if (definition.name !== name) {
        throw new TrellisError('InvalidPlugin', `reload('${name}') was given ${type.name}, which is named '${definition.name}'`, { hint: 'Reload with a class of the same plugin name' });
      }
      const next = preparePlugin(definition, { config: old.config, enabled: old.enabled, ...options }, this.current, {
        container: this.container,
        appMiddleware: this.appMiddleware,
        seq: old.seq,
        replacing: name,
      });
      await this.lifecycle(next, 'onInstall');
      this.publish(this.current.plugins.map((p) => (p === old ? next : p)));
      await this.lifecycle(old, 'onUninstall').catch((error: unknown) => this.reportError(error, name));
      await old.container.unbindAllAsync();
      this.bus.emit({ type: 'plugin.reloaded', plugin: name, from: old.definition.version, to: definition.version });
      return next;
    });
  }

  /** Switches a plugin's behavioural parts (tools, hooks, transforms) back on. */
  enable(name: string): void {
    this.setEnabled(name, true);
  }

  /** Switches a plugin's behavioural parts off without uninstalling it; its state and handlers stay. */
  disable(name: string): void {
    this.setEnabled(name, false);
  }

  /**
   * Imports every module of a directory and installs each exported `@Plugin` class. A
   * module that fails to import, or a plugin that fails to install, is reported with its
   * file and reason; the others still load.
   */
  async loadDirectory(dir: string): Promise<LoadReport> {
    const installed: { file: string; plugin: string }[] = [];
    const failed: { file: string; plugin?: string; reason: string }[] = [];
    for (const file of await pluginModules(dir)) {
      let classes: PluginClass[];
      try {
        classes = await importPlugins(file);
      } catch (error) {
        failed.push({ file, reason: `import failed: ${describeError(error)}` });
        continue;
      }
      for (const type of classes) {
        try {
          const plugin = await this.install(type);
          installed.push({ file, plugin: plugin.definition.name });
        } catch (error) {
          failed.push({ file, plugin: type.name, reason: describeError(error) });
        }
      }
    }
    return { installed, failed };
  }

  /** Runs every `@SelfTest()` method; a test passes unless it throws or returns false. */
  async selfTest(): Promise<SelfTestReport> {
    const plugins = [];
    for (const plugin of this.current.plugins) {
      const tests = [];
      for (const method of plugin.definition.selfTests) {
        try {
          const out = await (plugin.instance as Record<string, () => unknown>)[method]!();
          tests.push(out === false ? { name: method, ok: false, error: 'returned false' } : { name: method, ok: true });
        } catch (error) {
          tests.push({ name: method, ok: false, error: describeError(error) });
        }
      }
      plugins.push({ plugin: plugin.definition.name, ok: tests.every((t) => t.ok), tests });
    }
    return { ok: plugins.every((p) => p.ok), plugins };
  }

  /** Binds an agent spec to this app; `agent.session(id?)` opens conversations. */
  agent(spec: AgentSpec): Agent {
    return new Agent(this, spec);
  }

  /** Runs `app.startup` hooks by priority, then starts the heartbeat if configured. */
  async start(): Promise<void> {
    if (this.phase === 'started') return;
    if (this.phase === 'stopped') throw new TrellisError('NotStarted', 'This app was stopped', { hint: 'Create a new app with Trellis.create()' });
    await this.hooks.sequential('app.startup', this.current.view().hooks['app.startup'], undefined, this.appRun());
    this.phase = 'started';
    if (this.options.heartbeatMs) {
      this.heartbeat = setInterval(() => void this.beat(), this.options.heartbeatMs);
      this.heartbeat.unref();
    }
  }

  /**
   * Runs `app.shutdown` hooks in reverse order with the signal, closes the store and
   * releases the container's singletons. The app cannot be started again.
   */
  async stop(signal?: string): Promise<void> {
    if (this.phase === 'stopped') return;
    if (this.heartbeat) clearInterval(this.heartbeat);
    this.heartbeat = undefined;
    try {
      await this.hooks.sequential('app.shutdown', this.current.view().hooks['app.shutdown'], signal, this.appRun(), true);
    } finally {
      this.phase = 'stopped';
      // Async: a singleton's @preDestroy may close a pool; sync unbindAll throws on those.
      for (const plugin of [...this.current.plugins].reverse()) await plugin.container.unbindAllAsync();
      await this.container.unbindAllAsync();
      await this.store?.close();
      this.bus.complete();
    }
  }

  get started(): boolean {
    return this.phase === 'started';
  }

  /** The live state of a session, created on first use. */
  sessionState(sessionId: string): SessionState {
    let state = this.sessions.get(sessionId);
    if (!state) {
      state = new SessionState(sessionId, this.bus);
      this.sessions.set(sessionId, state);
    }
    return state;
  }

  /** Forgets a session's live state (the store keeps what was checkpointed). */
  releaseSession(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  /** Reports an error on the event stream without throwing. */
  reportError(error: unknown, plugin?: string, point?: string, sessionId?: string): void {
    const code = TrellisError.is(error) ? error.code : 'HookFailed';
    this.bus.emit({ type: 'error', code, message: describeError(error), plugin, point, sessionId });
  }

  private appRun(): HookRun {
    return { scope: new ContextScope(this.appState, undefined, undefined), schema: this.current };
  }

  private async beat(): Promise<void> {
    this.bus.emit({ type: 'heartbeat', at: Date.now() });
    try {
      await this.hooks.parallel('app.heartbeat', this.current.view().hooks['app.heartbeat'], Date.now(), this.appRun());
    } catch (error) {
      this.reportError(error, undefined, 'app.heartbeat');
    }
  }

  private plugin(name: string): InstalledPlugin {
    const plugin = this.current.byName.get(name);
    if (!plugin) {
      throw new TrellisError('UnknownPlugin', `No plugin named '${name}' is installed`, {
        hint: `Installed: ${[...this.current.byName.keys()].join(', ') || 'none'}`,
      });
    }
    return plugin;
  }

  private setEnabled(name: string, enabled: boolean): void {
    const plugin = this.plugin(name);
    if (plugin.enabled === enabled) return;
    this.publish(this.current.plugins.map((p) => (p === plugin ? { ...p, enabled } : p)));
  }

  private publish(plugins: readonly InstalledPlugin[]): void {
    this.current = new RegistrySnapshot(plugins);
  }

  private async lifecycle(plugin: InstalledPlugin, method: keyof PluginLifecycle): Promise<void> {
    const hook = (plugin.instance as PluginLifecycle)[method];
    if (typeof hook !== 'function') return;
    try {
      await hook.call(plugin.instance, this);
    } catch (error) {
      // A plugin's own typed error (e.g. InvalidConfig found in onInstall) keeps its code.
      throw new TrellisError(TrellisError.is(error) ? error.code : 'InvalidPlugin', `${plugin.definition.name}.${method} failed: ${describeError(error)}`, {
        hint: method === 'onInstall' ? 'Nothing was registered; fix the error and install again' : 'The plugin was removed anyway',
        cause: error,
      });
    }
  }

  /** Registry changes run one at a time, so each validates against the set it replaces. */
  private serialize<T>(work: () => Promise<T>): Promise<T> {
    const run = this.mutation.then(work, work);
    this.mutation = run.catch(() => undefined);
    return run;
  }
}
