import {
  Inject,
  Injectable,
  Logger,
  type BeforeApplicationShutdown,
  type OnApplicationBootstrap,
  type OnModuleDestroy,
  type OnModuleInit,
} from '@nestjs/common';
import { Trellis, TrellisError, type Agent, type ModelProvider } from '../../../index.js';
import { describeError } from '../../../plugin.js';
import { HostedAgent } from './hosted-agent.js';
import { PluginDiscovery, pluginSeal, type DiscoveredPlugin } from './plugin-discovery.js';
import { HostedWorker } from './queue/hosted-worker.js';
import { queueSettings } from './queue/queue-options.js';
import { QueuedTurns } from './queue/queued-turns.js';
import { TrellisRequestContext } from './request-context.js';
import { TRELLIS_MODULE_OPTIONS } from './trellis-module-definition.js';
import type { TrellisAgentOptions, TrellisModuleOptions } from './trellis-module-options.js';
import { getAgentToken } from './trellis-tokens.js';
import { inProcessTurns } from './turn-dispatcher.js';
import { TurnTracker } from './turn-tracker.js';

const DEFAULT_SHUTDOWN_TIMEOUT_MS = 10_000;

/**
 * Owns the Trellis app inside Nest and ties it to Nest's lifecycle: plugins found by
 * `forFeature` are installed on `onModuleInit` (an install error fails bootstrap with the
 * Trellis message), `app.startup` hooks run on `onApplicationBootstrap` (every module is
 * initialised by then), running turns are drained on `onModuleDestroy` and `app.shutdown`
 * hooks run with the signal on `beforeApplicationShutdown`. With `queue`, hosted turns go
 * to the worker queue (loaded on `onModuleInit`, connected by the first turn, closed before
 * the app stops); with `worker`, a `TrellisWorker` runs queued turns with this app from
 * `onApplicationBootstrap` until `onModuleDestroy`.
 */
@Injectable()
export class TrellisHost implements OnModuleInit, OnApplicationBootstrap, OnModuleDestroy, BeforeApplicationShutdown {
  readonly app: Trellis;
  readonly tracker = new TurnTracker();
  readonly #agents = new Map<string, HostedAgent>();
  readonly #kernelAgents = new Map<string, Agent>();
  readonly #logger = new Logger('Trellis');
  readonly #queued: QueuedTurns | undefined;
  readonly #worker: HostedWorker | undefined;

  constructor(
    @Inject(TRELLIS_MODULE_OPTIONS) private readonly options: TrellisModuleOptions,
    private readonly discovery: PluginDiscovery,
    private readonly requestContext: TrellisRequestContext,
  ) {
    const queue = queueSettings(options);
    this.app = Trellis.create({
      store: options.store,
      middleware: options.middleware,
      providers: options.providers,
      heartbeatMs: options.heartbeatMs,
      approvals: options.approvals,
    });
    this.#queued = queue && new QueuedTurns(queue);
    this.#worker = queue?.worker && new HostedWorker(queue.worker, queue.store, this.#kernelAgents);
    const turns = { requestContext, tracker: this.tracker, dispatcher: this.#queued ?? inProcessTurns };
    for (const spec of options.agents ?? []) {
      if (this.#agents.has(spec?.name)) {
        throw new TrellisError('InvalidOptions', `TrellisModule: two agents are named '${spec.name}'`, {
          hint: 'Give each agent its own name',
        });
      }
      const agent = this.createAgent(spec);
      this.#kernelAgents.set(spec.name, agent);
      this.#agents.set(spec.name, new HostedAgent(agent, turns));
    }
  }

  /** The id of the `TrellisWorker` this app runs (`worker` option), once it started. */
  get workerId(): string | undefined {
    return this.#worker?.id;
  }

  /** The agent named `name`, as `@InjectAgent(name)` gives it. */
  agent(name: string): HostedAgent {
    const agent = this.#agents.get(name);
    if (!agent) {
      throw new TrellisError('InvalidOptions', `No agent named '${name}' is configured in TrellisModule`, {
        hint: `Configured: ${[...this.#agents.keys()].join(', ') || 'none'}. Add it to the agents option`,
      });
    }
    return agent;
  }

  /**
   * Installs the discovered plugins and loads the queue. If a step fails, what the earlier
   * ones did is undone before the error reaches Nest, which runs no shutdown hook after a
   * failed `init()`: the plugins installed so far are uninstalled (their `onUninstall` runs,
   * in reverse order) and the app is stopped (its store closed).
   */
  async onModuleInit(): Promise<void> {
    const agentTokens = [...this.#agents.keys()].map(getAgentToken);
    const kernel = [
      this,
      this.app,
      this.options,
      this.options.store,
      ...this.#agents.values(),
      ...this.#kernelAgents.values(),
    ];
    const installed: string[] = [];
    try {
      await this.installAll(this.discovery.discover(pluginSeal(agentTokens, [TrellisHost], kernel)), installed);
      await this.#queued?.load();
    } catch (error) {
      await this.undoBootstrap(installed);
      throw error;
    }
  }

  async onApplicationBootstrap(): Promise<void> {
    await this.app.start();
    await this.#worker?.start();
  }

  async onModuleDestroy(): Promise<void> {
    const timeout = this.options.shutdownTimeoutMs ?? DEFAULT_SHUTDOWN_TIMEOUT_MS;
    // Turns sent from here first: with `worker`, they may be waiting for this app's own worker.
    const { aborted } = await this.tracker.drain(timeout);
    if (aborted > 0) {
      const what = this.#queued ? 'Stopped waiting for' : 'Cancelled';
      this.#logger.warn(`${what} ${aborted} turn(s) still running ${timeout} ms after shutdown began`);
    }
    if (this.#worker && !(await this.#worker.close(timeout))) {
      this.#logger.warn(
        `Left the queued turns still running ${timeout} ms after shutdown began to another worker (BullMQ's stalled-job check)`,
      );
    }
  }

  async beforeApplicationShutdown(signal?: string): Promise<void> {
    await this.#queued?.close();
    await this.app.stop(signal);
  }

  /** Installs in dependency order: a plugin whose `dependsOn` is not installed yet waits for the others. */
  private async installAll(plugins: readonly DiscoveredPlugin[], installed: string[]): Promise<void> {
    let waiting = [...plugins];
    while (waiting.length > 0) {
      const deferred: { plugin: DiscoveredPlugin; error: unknown }[] = [];
      for (const plugin of waiting) {
        try {
          installed.push(
            (await this.app.install(plugin.plugin, { ...plugin.options, instance: plugin.instance })).name,
          );
        } catch (error) {
          if (!TrellisError.is(error, 'MissingDependency')) throw this.fromModule(error, plugin);
          deferred.push({ plugin, error });
        }
      }
      if (deferred.length === waiting.length) throw this.fromModule(deferred[0]!.error, deferred[0]!.plugin);
      waiting = deferred.map((d) => d.plugin);
    }
  }

  /**
   * Uninstalls `installed` in reverse order (dependents first) and stops the app. A plugin
   * whose `onUninstall` fails is logged and the others are still uninstalled; the error that
   * failed bootstrap is the one Nest reports.
   */
  private async undoBootstrap(installed: readonly string[]): Promise<void> {
    for (const name of [...installed].reverse()) {
      await this.app
        .uninstall(name)
        .catch((error: unknown) =>
          this.#logger.error(`Could not uninstall '${name}' after the failed bootstrap: ${describeError(error)}`),
        );
    }
    await this.app
      .stop()
      .catch((error: unknown) =>
        this.#logger.error(`Could not stop the Trellis app after the failed bootstrap: ${describeError(error)}`),
      );
  }

  private fromModule(error: unknown, plugin: DiscoveredPlugin): unknown {
    if (!TrellisError.is(error)) return error;
    // The message already ends with the hint.
    return new TrellisError(error.code, `${plugin.module}: ${error.message}`, {
      details: { ...error.details, module: plugin.module },
      cause: error,
    });
  }

  private createAgent(spec: TrellisAgentOptions): Agent {
    if (typeof spec?.model !== 'string') return this.app.agent(spec as Parameters<Trellis['agent']>[0]);
    const model: ModelProvider | undefined = this.options.models?.[spec.model];
    if (!model) {
      throw new TrellisError(
        'InvalidOptions',
        `Agent '${spec.name}' names the model '${spec.model}', which is not in the models option`,
        {
          hint: `Models: ${Object.keys(this.options.models ?? {}).join(', ') || 'none'}. Add it to models, or pass the ModelProvider itself`,
        },
      );
    }
    return this.app.agent({ ...spec, model });
  }
}
