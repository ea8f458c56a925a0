import 'reflect-metadata';
import { Container, type ServiceIdentifier } from 'inversify';
import type { Observable } from 'rxjs';
import { Agent } from '../agent/agent.js';
import { DELEGATE } from '../agent/delegation/delegate-handle.js';
import type { AgentSpec } from '../agent/agent-spec.js';
import type { SessionHost } from '../agent/session-host.js';
import { LEASE_TTL_MS } from '../agent/durability/session-lease.js';
import { DEFAULT_RETENTION, type SessionRetention } from '../agent/open-sessions.js';
import { ContextScope } from '../engine/state/context-scope.js';
import { describeError } from '../errors/describe-error.js';
import { TrellisError } from '../errors/trellis-error.js';
import { EventBus } from '../engine/events/event-bus.js';
import type { TrellisEvent } from '../engine/events/trellis-event.js';
import { HookEngine, type HookSite } from '../engine/hooks/hook-engine.js';
import { importPlugins, pluginModules, type LoadReport } from '../engine/plugin/directory-loader.js';
import type { InstalledPlugin } from '../engine/plugin/installed-plugin.js';
import { describeToken, guardToken, LEGITIMATE_ROUTES } from '../engine/plugin/kernel-guard.js';
import { reservedBy, reservedNamespace, tokenName } from '../engine/plugin/namespaces.js';
import {
  buildMiddleware,
  validateMiddlewareOptions,
  type BuiltMiddleware,
} from '../engine/plugin/middleware-factory.js';
import type { PluginClass, PluginDefinition } from '../engine/plugin/plugin-definition.js';
import { explorePlugin } from '../engine/plugin/plugin-explorer.js';
import type { PluginHost, PluginLogger } from '../engine/plugin/plugin-host.js';
import {
  ownInstallOptions,
  preparePlugin,
  type InstallEnvironment,
  type InstallOptions,
} from '../engine/plugin/plugin-installer.js';
import type { PluginLifecycle } from '../engine/plugin/plugin-lifecycle.js';
import { SESSION_STORE, TRELLIS_APP } from '../contract/plugin-tokens.js';
import { RegistrySnapshot } from '../engine/plugin/registry-snapshot.js';
import { SessionState } from '../engine/state/session-state.js';
import { StateEngine } from '../engine/state/state-engine.js';
import { canCompact, type SessionStore } from '../engine/stores/session-store.js';
import { MemoryRecords } from '../engine/stores/memory-records.js';
import { hasRecordStore, type RecordStore } from '../engine/stores/record-store.js';
import { pluginRecords } from './plugin-records.js';
import type { MiddlewareDeclaration } from '../contract/tool-middleware.js';
import { describeRegistry, type AppDescription } from './app-description.js';
import { pluginContract, type PluginContract } from './plugin-contract.js';
import {
  checkSelector,
  erasureFailed,
  sessionsToErase,
  type EraseOptions,
  type EraseReport,
  type EraseSelector,
} from '../engine/erasure/erasure.js';
import { registerKernel } from './kernel-access.js';
import { bindProviders, type Provider } from './providers.js';
import type { SelfTestReport } from './self-test-report.js';
import { compileApprovalPolicies, type ApprovalSettings } from '../agent/approval/approval-policy.js';
import { BudgetGuard, type BudgetSettings } from '../engine/budgets/budgets.js';
import { sweepExpired, type ExpiryReport } from './expiry-sweep.js';
import { modelsOf, schemaProblems, unsupportedSchema } from '../agent/turn/schema-check.js';

export { TRELLIS_APP } from '../contract/plugin-tokens.js';

export interface TrellisOptions {
  /** Services plugins and middleware may inject. */
  readonly providers?: readonly Provider[];
  /** App-wide tool middleware, outermost around every tool. */
  readonly middleware?: readonly MiddlewareDeclaration[];
  /** Where sessions are kept between turns. */
  readonly store?: SessionStore;
  /** Run `app.heartbeat` hooks this often once started. */
  readonly heartbeatMs?: number;
  /**
   * How many sessions each agent keeps open in memory (default 10,000) and how long an idle
   * one stays (default 30 minutes). Dropped sessions reload from the store when opened again;
   * without a store they start over, so set these generously for a `MemoryStore`-less app.
   */
  readonly sessions?: Partial<SessionRetention>;
  /** A pino-shaped logger; each plugin gets `logger.child({ plugin })` on its `PluginHost`. */
  readonly logger?: PluginLogger & { child?(bindings: object): PluginLogger };
  /**
   * How long a session's lease lasts without renewal (default 30 s; renewed every third of it
   * while a turn runs): after a process dies mid-turn, another one goes on with the turn this
   * long after the last renewal. Lower it for faster recovery, keep it well above the longest
   * pause a process may have (GC, a stopped VM). Whole milliseconds, 1,000 to 86,400,000.
   */
  readonly leaseTtlMs?: number;
  /**
   * Who may decide on which suspended calls: approval policies per tool or tag (roles, a
   * quorum of distinct approvers, an expiry, required reasons). See docs/governance.md.
   */
  readonly approvals?: ApprovalSettings;
  /**
   * Spending limits per plugin or owner, enforced before each tool call (`BudgetExceeded`):
   * tool calls per minute, tokens and cost over a window (counted in the store, or shared by
   * workers with a `RedisBudgetCounter`), tool time, all time and tokens per turn. See docs/governance.md.
   */
  readonly budgets?: BudgetSettings;
}

const APP_SESSION = '(app)';
const SILENT: PluginLogger = { debug() {}, info() {}, warn() {}, error() {} };

/**
 * The kernel: plugin registry, hook engine, state engine and event stream. Its machinery
 * is private: hosts drive it through `install`/`agent`/`session`, agents and sessions
 * through the `SessionHost` port, plugins through their `PluginHost`.
 *
 * @example
 * const app = Trellis.create({ providers: [OrdersRepo] });
 * await app.install(OrdersPlugin, { config: { region: 'eu' } });
 * await app.start();
 */
export class Trellis {
  readonly #bus = new EventBus();
  readonly #stateEngine = new StateEngine(this.#bus);
  readonly #hooks = new HookEngine(this.#stateEngine, this.#bus);
  /** Host providers, exports and guards: the only container plugins resolve from. */
  readonly #providers = new Container();
  readonly #options: TrellisOptions;
  readonly #appMiddleware: readonly BuiltMiddleware[];
  readonly #appState = new SessionState(APP_SESSION, this.#bus);
  readonly #sessions = new Map<string, SessionState>();
  readonly #exports = new Map<string, ServiceIdentifier[]>();
  readonly #host: SessionHost;
  readonly #agents = new Map<string, Agent<unknown>>();
  #current = new RegistrySnapshot([]);
  #mutation: Promise<unknown> = Promise.resolve();
  #seq = 0;
  /** Plugins' records when the app has no store (its sessions live in memory too). */
  #memoryRecords: MemoryRecords | undefined;
  #heartbeat: NodeJS.Timeout | undefined;
  /** The expiry sweep's timer (`approvals.sweepEveryMs`), and the sweep running now, if any. */
  #sweeper: NodeJS.Timeout | undefined;
  #sweeping: Promise<ExpiryReport> | undefined;
  #phase: 'created' | 'started' | 'stopped' = 'created';

  /** Every event the app and its sessions emit. */
  readonly events$: Observable<TrellisEvent> = this.#bus.events$;

  private constructor(options: TrellisOptions) {
    this.#options = options;
    this.#bus.ownerOf = (plugin) => this.#current.byName.get(plugin)?.definition.owner;
    bindProviders(this.#providers, options.providers ?? []);
    guardToken(this.#providers, TRELLIS_APP, 'TRELLIS_APP (the Trellis app)', LEGITIMATE_ROUTES);
    guardToken(this.#providers, Trellis as unknown as ServiceIdentifier, 'the Trellis app', LEGITIMATE_ROUTES);
    guardToken(
      this.#providers,
      SESSION_STORE,
      "SESSION_STORE (every session's stored transcript and state)",
      LEGITIMATE_ROUTES,
    );
    guardToken(this.#providers, EventBus, 'the event bus (EventBus)', LEGITIMATE_ROUTES);
    guardToken(this.#providers, StateEngine, 'the state engine (StateEngine)', LEGITIMATE_ROUTES);
    guardToken(this.#providers, HookEngine, 'the hook engine (HookEngine)', LEGITIMATE_ROUTES);
    if (options.store)
      guardToken(
        this.#providers,
        options.store.constructor as ServiceIdentifier,
        `the session store (${options.store.constructor.name})`,
        LEGITIMATE_ROUTES,
      );
    this.#appMiddleware = (options.middleware ?? []).map((d) =>
      buildMiddleware(d, validateMiddlewareOptions(d, 'Trellis.create middleware'), this.#providers),
    );
    const app = this;
    this.#host = {
      get registry() {
        return app.#current;
      },
      hooks: this.#hooks,
      state: this.#stateEngine,
      events: this.#bus,
      store: options.store,
      retention: { ...DEFAULT_RETENTION, ...options.sessions },
      leaseTtlMs: options.leaseTtlMs ?? LEASE_TTL_MS,
      approvals: compileApprovalPolicies(options.approvals),
      ...(options.budgets !== undefined && { budgets: new BudgetGuard(options.budgets, options.store) }),
      sessionState: (id) => this.#sessionState(id),
      releaseSession: (id) => void this.#sessions.delete(id),
      reportError: (error, plugin, point, sessionId) => this.#reportError(error, plugin, point, sessionId),
      agent: (name) => this.#agents.get(name)?.[DELEGATE](),
    };
    registerKernel(
      this,
      Object.assign(Object.create(this.#host) as SessionHost, {
        providers: this.#providers,
        liveSessions: () => this.#sessions.size,
      }),
    );
  }

  static create(options: TrellisOptions = {}): Trellis {
    if (options.heartbeatMs !== undefined && !(options.heartbeatMs > 0)) {
      throw new TrellisError(
        'InvalidOptions',
        `heartbeatMs must be a positive number of milliseconds, got ${options.heartbeatMs}`,
        { hint: 'Pass e.g. heartbeatMs: 30000, or leave it out' },
      );
    }
    const ttl = options.leaseTtlMs;
    if (ttl !== undefined && !(Number.isSafeInteger(ttl) && ttl >= 1_000 && ttl <= 86_400_000)) {
      throw new TrellisError(
        'InvalidOptions',
        `leaseTtlMs must be a whole number of milliseconds from 1,000 to 86,400,000, got ${String(ttl)}`,
        { hint: 'Pass e.g. leaseTtlMs: 10000, or leave it out for 10 s' },
      );
    }
    const { maxOpen, idleMs } = options.sessions ?? {};
    if (
      (maxOpen !== undefined && !(Number.isInteger(maxOpen) && maxOpen >= 1)) ||
      (idleMs !== undefined && !(idleMs > 0))
    ) {
      throw new TrellisError(
        'InvalidOptions',
        `sessions must be { maxOpen: a whole number ≥ 1, idleMs: a positive number }, got ${JSON.stringify(options.sessions)}`,
        { hint: 'Pass e.g. sessions: { maxOpen: 10000, idleMs: 1800000 }, or leave it out' },
      );
    }
    return new Trellis(options);
  }

  /**
   * Validates and installs a plugin class. Throws a `TrellisError` (and registers nothing)
   * on a duplicate name, a clash of tool / state / effect / action names, a missing
   * dependency, invalid config or middleware options, a constructor that asks for the
   * kernel (`KernelAccess`), or a failing `onInstall`.
   */
  install<T extends object>(type: PluginClass<T>, given: InstallOptions = {}): Promise<InstalledRef<T>> {
    const options = ownInstallOptions(given);
    return this.#serialize(async () => {
      const definition = explorePlugin(type);
      const plugin = this.#prepare(definition, options, this.#installEnv(++this.#seq));
      this.#checkSchemas(plugin);
      await this.#lifecycle(plugin, 'onInstall', options);
      this.#publish([...this.#current.plugins, plugin], this.#current);
      this.#bus.emit({ type: 'plugin.installed', plugin: definition.name, version: definition.version });
      return { name: definition.name, version: definition.version, instance: plugin.instance as T };
    });
  }

  /** Removes every behavioural part of a plugin and clears its state keys (unless retained). */
  uninstall(name: string): Promise<void> {
    return this.#serialize(async () => {
      const plugin = this.#plugin(name);
      const dependents = this.#current.plugins
        .filter((p) => p.definition.dependsOn.includes(name))
        .map((p) => p.definition.name);
      if (dependents.length > 0) {
        throw new TrellisError(
          'DependentPlugin',
          `Cannot uninstall '${name}': ${dependents.map((d) => `'${d}'`).join(', ')} depend${dependents.length === 1 ? 's' : ''} on it`,
          {
            hint: `Uninstall ${dependents.join(', ')} first`,
            details: { plugin: name, dependents },
          },
        );
      }
      await this.#lifecycle(plugin, 'onUninstall');
      this.#publish(this.#current.plugins.filter((p) => p !== plugin));
      const cleared = plugin.stateKeys.filter((k) => !k.retainOnUninstall).map((k) => k.key);
      this.#appState.clear(cleared);
      for (const state of this.#sessions.values()) state.clear(cleared);
      this.#unexport(name);
      await plugin.container.unbindAllAsync();
      this.#bus.emit({ type: 'plugin.uninstalled', plugin: name });
    });
  }

  /**
   * Swaps a plugin for a new version in one step: turns that start afterwards see only the
   * new one, turns already running keep the old. State keys are kept.
   */
  reload<T extends object>(name: string, type: PluginClass<T>, given: InstallOptions = {}): Promise<InstalledRef<T>> {
    const options = ownInstallOptions(given);
    return this.#serialize(async () => {
      const old = this.#plugin(name);
      const definition = explorePlugin(type);
      if (definition.name !== name) {
        throw new TrellisError(
          'InvalidPlugin',
          `reload('${name}') was given ${type.name}, which is named '${definition.name}'`,
          { hint: 'Reload with a class of the same plugin name' },
        );
      }
      const merged = ownInstallOptions({ config: old.config, enabled: old.enabled, grants: old.grants, ...options });
      const next = this.#prepare(definition, merged, { ...this.#installEnv(old.seq), replacing: name });
      this.#checkSchemas(next);
      this.#unexport(name);
      await this.#lifecycle(next, 'onInstall', merged);
      this.#publish(this.#current.plugins.map((p) => (p === old ? next : p)));
      await this.#lifecycle(old, 'onUninstall').catch((error: unknown) => this.#reportError(error, name));
      await old.container.unbindAllAsync();
      this.#bus.emit({ type: 'plugin.reloaded', plugin: name, from: old.definition.version, to: definition.version });
      return { name: definition.name, version: definition.version, instance: next.instance as T };
    });
  }

  /** Switches a plugin's behavioural parts (tools, hooks, transforms) back on. */
  enable(name: string): void {
    this.#setEnabled(name, true);
  }

  /** Switches a plugin's behavioural parts off without uninstalling it; its state and handlers stay. */
  disable(name: string): void {
    this.#setEnabled(name, false);
  }

  /**
   * What is installed, as plain data: plugins with their tools (input schemas, middleware,
   * declared context), hooks, state keys, and each point's handlers in run order.
   */
  describe(): AppDescription {
    return describeRegistry(this.#current);
  }

  /**
   * Erases stored sessions — one, a user's (`app.user_id`), a tenant's (`app.tenant`), or those
   * not updated since a time — with everything the store keeps of them (transcript, turns,
   * suspension, step journal, recorded turn events), after every installed plugin's `onErase`
   * removed what it holds of them elsewhere, and each of `options.also` (the app's `TurnQueue`:
   * their jobs in Redis). Sessions open in this process are dropped from memory. The approval
   * audit log is append-only and keeps its entries (session ids, approver ids, arguments'
   * hashes; never the arguments). See docs/governance.md.
   *
   * @throws TrellisError `InvalidOptions` for an empty or bad selector; `NotStarted` without a
   *   store; a plugin's `onErase` or an eraser's failure (nothing deleted then: run it again).
   */
  async erase(selector: EraseSelector, options: EraseOptions = {}): Promise<EraseReport> {
    checkSelector(selector);
    const store = this.#options.store;
    if (!store)
      throw new TrellisError('NotStarted', 'erase() needs a session store: this app keeps sessions in memory only', {
        hint: 'Create the app with Trellis.create({ store })',
      });
    const also = options.also ?? [];
    if (!Array.isArray(also) || also.some((e) => typeof e?.eraseSessions !== 'function')) {
      throw new TrellisError(
        'InvalidOptions',
        'erase(): `also` must be a list of erasers, each with eraseSessions(request) (a TurnQueue is one)',
        { hint: 'app.erase({ userId }, { also: [queue] })' },
      );
    }
    const { sessionIds, userIds } = await sessionsToErase(store, selector);
    const report = { sessions: sessionIds, plugins: [] as string[], also: [] as string[] };
    // A user's or tenant's data may live outside their stored sessions (a queued first turn, a plugin's totals).
    if (sessionIds.length === 0 && selector.userId === undefined && selector.tenant === undefined) return report;
    const request = { sessionIds, selector, userIds };
    for (const plugin of this.#current.plugins) {
      const hook = (plugin.instance as PluginLifecycle).onErase;
      if (typeof hook !== 'function') continue;
      try {
        await hook.call(plugin.instance, request);
      } catch (error) {
        throw erasureFailed(`${plugin.definition.name}.onErase`, error);
      }
      report.plugins.push(plugin.definition.name);
    }
    for (const eraser of also) {
      const name = (eraser as object).constructor?.name ?? 'eraser';
      try {
        await eraser.eraseSessions(request);
      } catch (error) {
        throw erasureFailed(`${name}.eraseSessions`, error);
      }
      report.also.push(name);
    }
    for (const id of sessionIds) {
      await store.delete(id);
      this.#sessions.delete(id);
      for (const agent of this.#agents.values()) agent.forget(id);
    }
    // Deleted rows stay in a file's free pages until it is rewritten.
    if (sessionIds.length > 0 && canCompact(store)) await store.compact();
    return report;
  }

  /**
   * The contract of each installed plugin: what other teams may rely on (tools' input and
   * output schemas, hook points, context keys read and written, state keys, effects, actions,
   * dependencies). `trellis plugins --json` writes them; `trellis contract diff` compares two.
   */
  contracts(): PluginContract[] {
    return this.#current.plugins.map(pluginContract);
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
          installed.push({ file, plugin: plugin.name });
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
    for (const plugin of this.#current.plugins) {
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

  /**
   * Binds an agent spec to this app; `agent.session(id?)` opens conversations. With `output`,
   * the agent's turns end with `result.output` typed as that DTO.
   *
   * @throws TrellisError `InvalidOptions` for a spec that is wrong, `UnsupportedSchema` for an
   *   output DTO or a tool schema one of its models cannot take (what to change, line by line).
   */
  agent<TOutput = unknown>(spec: AgentSpec<TOutput>): Agent<TOutput> {
    const agent = new Agent<TOutput>(this.#host, spec);
    // By name, for delegation (agents as tools, handoffs); the latest of a name wins.
    this.#agents.set(agent.spec.name, agent);
    return agent;
  }

  /** Runs `app.startup` hooks by priority, then starts the heartbeat if configured. */
  async start(): Promise<void> {
    if (this.#phase === 'started') return;
    if (this.#phase === 'stopped')
      throw new TrellisError('NotStarted', 'This app was stopped', { hint: 'Create a new app with Trellis.create()' });
    await this.#hooks.run('app.startup', undefined, this.#appSite());
    this.#phase = 'started';
    if (this.#options.heartbeatMs) {
      this.#heartbeat = setInterval(() => void this.#beat(), this.#options.heartbeatMs);
      this.#heartbeat.unref();
    }
    const sweepEveryMs = this.#options.approvals?.sweepEveryMs;
    if (sweepEveryMs !== undefined && this.#options.store !== undefined) {
      this.#sweeper = setInterval(
        () =>
          void this.expirePending().catch((error: unknown) => this.#reportError(error, undefined, 'approvals.sweep')),
        sweepEveryMs,
      );
      this.#sweeper.unref();
    }
  }

  /**
   * Rejects the waiting calls past their approval policy's `expiresAfterMs` in every suspended
   * session of the store whose agent this app has, and goes on with their turns (the model is
   * told each call was not approved in time), each entry audited. `approvals.sweepEveryMs` runs
   * it on a timer once the app is started; a host may call it from its own scheduler. A sweep
   * already running is joined, not doubled.
   */
  expirePending(): Promise<ExpiryReport> {
    const store = this.#options.store;
    if (store === undefined)
      return Promise.reject(
        new TrellisError('NotStarted', 'expirePending() needs a session store: suspended turns live there', {
          hint: 'Create the app with Trellis.create({ store })',
        }),
      );
    if (this.#sweeping !== undefined) return this.#sweeping;
    const sweeping = sweepExpired({
      store,
      policies: this.#host.approvals ?? [],
      tools: this.#current.tools,
      agent: (name) => this.#agents.get(name),
      ...(this.#options.approvals?.sweepContext !== undefined && { context: this.#options.approvals.sweepContext }),
    });
    this.#sweeping = sweeping;
    const done = () => {
      if (this.#sweeping === sweeping) this.#sweeping = undefined;
    };
    sweeping.then(done, done);
    return sweeping;
  }

  /**
   * Runs `app.shutdown` hooks in reverse order with the signal, closes the store and
   * releases the container's singletons. The app cannot be started again.
   */
  async stop(signal?: string): Promise<void> {
    if (this.#phase === 'stopped') return;
    if (this.#heartbeat) clearInterval(this.#heartbeat);
    this.#heartbeat = undefined;
    if (this.#sweeper) clearInterval(this.#sweeper);
    this.#sweeper = undefined;
    await this.#sweeping?.catch(() => undefined);
    try {
      await this.#hooks.run('app.shutdown', signal, this.#appSite());
    } finally {
      this.#phase = 'stopped';
      // Async: a singleton's @preDestroy may close a pool; sync unbindAll throws on those.
      for (const plugin of [...this.#current.plugins].reverse()) await plugin.container.unbindAllAsync();
      await this.#providers.unbindAllAsync();
      await this.#options.store?.close();
      this.#bus.complete();
    }
  }

  get started(): boolean {
    return this.#phase === 'started';
  }

  /**
   * Builds a plugin. Installed plugins' classes are bound nowhere a plugin resolves from, so
   * a constructor (or a middleware) that asks for one fails; only then is it built once more
   * beside refusing bindings for every installed class, so that the error is `KernelAccess`
   * and names the plugin it reached for. (One refusing binding per install in the shared
   * container made every install invalidate the plan caches of every plugin's container:
   * the 1,000th install took ten times the first; see docs/performance.md.)
   */
  #prepare(definition: PluginDefinition, options: InstallOptions, env: InstallEnvironment): InstalledPlugin {
    try {
      return preparePlugin(definition, options, this.#current, env);
    } catch (error) {
      if (TrellisError.is(error, 'KernelAccess') || this.#current.plugins.length === 0) throw error;
      const guarded = new Container({ parent: this.#providers });
      for (const installed of this.#current.plugins) {
        const { name, type } = installed.definition;
        guardToken(
          guarded,
          type,
          `the plugin '${name}' (${type.name})`,
          `Plugins do not reach each other's instances. Ask its owner to export a service from onInstall (host.export), or to expose an effect or action. ${LEGITIMATE_ROUTES}`,
        );
      }
      try {
        preparePlugin(definition, options, this.#current, { ...env, container: guarded });
      } catch (again) {
        if (TrellisError.is(again, 'KernelAccess')) throw again;
      }
      throw error;
    }
  }

  /** A plugin's tools against the models of every agent that would offer them: refused now, not at the first call. */
  #checkSchemas(plugin: InstalledPlugin): void {
    if (plugin.tools.length === 0) return;
    const name = plugin.definition.name;
    for (const agent of this.#agents.values()) {
      const filter = agent.spec.plugins;
      if (filter !== undefined && filter.length > 0 && !filter.includes(name)) continue;
      const problems = schemaProblems(modelsOf(agent.spec.model), undefined, plugin.tools);
      if (problems.length > 0) throw unsupportedSchema(`Plugin '${name}' (for agent '${agent.spec.name}')`, problems);
    }
  }

  #installEnv(seq: number) {
    return {
      container: this.#providers,
      appMiddleware: this.#appMiddleware,
      seq,
      grantable: { app: this, store: this.#options.store },
    };
  }

  #sessionState(sessionId: string): SessionState {
    let state = this.#sessions.get(sessionId);
    if (!state) {
      state = new SessionState(sessionId, this.#bus);
      this.#sessions.set(sessionId, state);
    }
    return state;
  }

  #reportError(
    error: unknown,
    plugin?: string,
    point?: string,
    sessionId?: string,
    code?: TrellisError['code'],
    owner?: string,
  ): void {
    // The owner is given by a plugin's own host (it may report before it is registered); the bus finds it for the rest.
    this.#bus.emit({
      type: 'error',
      code: code ?? (TrellisError.is(error) ? error.code : 'HookFailed'),
      message: describeError(error),
      plugin,
      point,
      sessionId,
      ...(owner !== undefined && { owner }),
    });
  }

  #appSite(): HookSite {
    const registry = this.#current;
    return {
      scope: new ContextScope(this.#appState, undefined, undefined),
      schema: registry,
      hooks: registry.view().hooks,
    };
  }

  async #beat(): Promise<void> {
    this.#bus.emit({ type: 'heartbeat', at: Date.now() });
    try {
      await this.#hooks.run('app.heartbeat', Date.now(), this.#appSite());
    } catch (error) {
      this.#reportError(error, undefined, 'app.heartbeat');
    }
  }

  #plugin(name: string): InstalledPlugin {
    const plugin = this.#current.byName.get(name);
    if (!plugin) {
      throw new TrellisError('UnknownPlugin', `No plugin named '${name}' is installed`, {
        hint: `Installed: ${[...this.#current.byName.keys()].join(', ') || 'none'}`,
      });
    }
    return plugin;
  }

  #setEnabled(name: string, enabled: boolean): void {
    const plugin = this.#plugin(name);
    if (plugin.enabled === enabled) return;
    this.#publish(this.#current.plugins.map((p) => (p === plugin ? { ...p, enabled } : p)));
  }

  /** Swaps in the snapshot of `plugins`; `base`, when they extend its plugins, is copied rather than rebuilt. */
  #publish(plugins: readonly InstalledPlugin[], base?: RegistrySnapshot): void {
    this.#current = new RegistrySnapshot(plugins, base);
  }

  /** The host a plugin gets at `onInstall`/`onUninstall`: its own things, and what it was granted. */
  #pluginHost(plugin: InstalledPlugin): PluginHost {
    const name = plugin.definition.name;
    const grants = plugin.grants;
    const base = this.#options.logger;
    const logger = base ? (base.child?.({ plugin: name }) ?? base) : SILENT;
    const bus = this.#bus;
    return {
      name,
      config: plugin.config,
      logger,
      get events$(): Observable<TrellisEvent> {
        if (!grants.includes('events')) {
          throw new TrellisError(
            'KernelAccess',
            `Plugin '${name}' reads the app's event stream, which shows every session's traffic`,
            {
              hint: `The host grants it per plugin: app.install(${plugin.definition.type.name}, { grants: ['events'] })`,
              details: { plugin: name },
            },
          );
        }
        return bus.events$;
      },
      emit: (event, data) => bus.emit({ type: 'plugin.event', plugin: name, name: event, data }),
      reportError: (error, where = {}) =>
        this.#reportError(error, name, where.point, where.sessionId, where.code, plugin.definition.owner),
      records: pluginRecords(name, () => this.#recordStore(name)),
      export: (token, value) => {
        const tokenNamed = tokenName(token);
        const reserved = tokenNamed === undefined ? undefined : reservedNamespace(tokenNamed);
        if (reserved !== undefined) {
          throw new TrellisError(
            'ExportRefused',
            `Plugin '${name}' exports ${describeToken(token)}, which no plugin may export: ${reservedBy(reserved)}`,
            {
              hint: "Export a token of your own, named in your plugin's namespace; the host binds kernel tokens with Trellis.create({ providers })",
              details: { plugin: name, token: describeToken(token) },
            },
          );
        }
        if (!plugin.definition.exports.includes(token)) {
          throw new TrellisError(
            'ExportRefused',
            `Plugin '${name}' exports ${describeToken(token)}, which it does not declare`,
            {
              hint: `A token belongs to the plugin that declares it: @Plugin({ name: '${name}', exports: [${describeToken(token)}] })`,
              details: { plugin: name, token: describeToken(token) },
            },
          );
        }
        if (this.#providers.isCurrentBound(token)) {
          throw new TrellisError(
            'DuplicateRegistration',
            `Plugin '${name}' exports ${String(typeof token === 'function' ? token.name : token)}, which is already provided`,
            { hint: 'Export under a token of your own' },
          );
        }
        this.#providers.bind(token).toConstantValue(value);
        const list = this.#exports.get(name) ?? [];
        list.push(token);
        this.#exports.set(name, list);
      },
    };
  }

  /** Where plugins' records live: the store when it keeps them, in memory when the app has no store. */
  #recordStore(plugin: string): RecordStore {
    const store = this.#options.store;
    if (!store) return (this.#memoryRecords ??= new MemoryRecords());
    if (hasRecordStore(store)) return store;
    throw new TrellisError(
      'NotStarted',
      `Plugin '${plugin}' keeps records, and the session store ${store.constructor.name} keeps none`,
      {
        hint: 'Use MemoryStore, SqliteStore or PostgresStore, or implement RecordStore (getRecord, putRecord, listRecords, deleteRecords) on your store',
        details: { plugin },
      },
    );
  }

  #unexport(name: string): void {
    for (const token of this.#exports.get(name) ?? [])
      if (this.#providers.isCurrentBound(token)) this.#providers.unbind(token);
    this.#exports.delete(name);
  }

  async #lifecycle(
    plugin: InstalledPlugin,
    method: 'onInstall' | 'onUninstall',
    _options?: InstallOptions,
  ): Promise<void> {
    const hook = (plugin.instance as PluginLifecycle)[method];
    if (typeof hook !== 'function') return;
    try {
      await hook.call(plugin.instance, this.#pluginHost(plugin));
    } catch (error) {
      if (method === 'onInstall') this.#unexport(plugin.definition.name);
      // A plugin's own typed error (e.g. InvalidConfig found in onInstall) keeps its code.
      throw new TrellisError(
        TrellisError.is(error) ? error.code : 'InvalidPlugin',
        `${plugin.definition.name}.${method} failed: ${describeError(error)}`,
        {
          hint:
            method === 'onInstall'
              ? 'Nothing was registered; fix the error and install again'
              : 'The plugin was removed anyway',
          cause: error,
        },
      );
    }
  }

  /** Registry changes run one at a time, so each validates against the set it replaces. */
  #serialize<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#mutation.then(work, work);
    this.#mutation = run.catch(() => undefined);
    return run;
  }
}

// Sealed: a plugin in the same process cannot patch Trellis's methods to capture sessions or transcripts (issue 34).
Object.freeze(Trellis.prototype);
Object.freeze(Trellis);

/**
 * What `install` and `reload` return to the host: the plugin's name, version and the
 * instance the app built (host code may call its public methods, e.g. a metrics
 * endpoint). Plugins never get each other's instances.
 */
export interface InstalledRef<T extends object = object> {
  readonly name: string;
  readonly version: string;
  readonly instance: T;
}
