import { performance } from 'node:perf_hooks';
import type { Registry } from 'prom-client';
import type { Subscription } from 'rxjs';
import {
  inject,
  Plugin,
  TrellisError,
  type PluginHost,
  type TrellisEvent,
  type PluginLifecycle,
  PLUGIN_CONFIG,
} from 'trellis/plugin';
import { MetricsConfig } from './metrics.config.js';
import type { MetricsInstruments } from './metrics-instruments.js';

/**
 * Prometheus metrics of the app's turns, from the event stream (`app.events$`), in a
 * registry of its own (never prom-client's global one), so two apps in one process
 * never mix their numbers:
 *
 * - `<prefix>model_latency_seconds{model}`: one model call (round start to round end);
 * - `<prefix>tool_latency_seconds{tool,outcome}`: one tool call, `outcome` `ok` or `error`;
 * - `<prefix>turn_latency_seconds{status}`: one turn;
 * - `<prefix>tokens_total{model,type,plugin,owner}`: tokens used, `type` `input` or `output`;
 *   a model call that read tools' results is counted under the plugins whose tools they came
 *   from (their share of it; `owner` where the plugin has one), the agent's own without them;
 * - `<prefix>errors_total{code,source}`: error events (`source="app"`) and failed tool
 *   calls (`source="tool"`), by error code.
 *
 * It needs no hooks, so it observes every agent whatever its `plugins` filter.
 *
 * @example
 * const { instance } = await app.install(MetricsPlugin);
 * http.get('/metrics', async (_, res) => res.type((instance as MetricsPlugin).contentType).send(await (instance as MetricsPlugin).metrics()));
 */
@Plugin({
  name: 'metrics',
  version: '1.0.0',
  description: 'Prometheus metrics: latency per model and tool, tokens, errors',
  config: MetricsConfig,
})
export class MetricsPlugin implements PluginLifecycle {
  /** Built at install, when prom-client is first loaded. */
  private instruments: MetricsInstruments | undefined;
  /** Round start times by session, then round number; cleared when the turn ends. */
  private readonly roundStarts = new Map<string, Map<number, number>>();
  private subscription: Subscription | undefined;

  constructor(@inject(PLUGIN_CONFIG) private readonly config: MetricsConfig) {}

  /** The plugin's own registry; register more metrics here to expose them together. */
  get registry(): Registry {
    return this.installed().registry;
  }

  /** The Prometheus text exposition of every metric in {@link registry}. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The `Content-Type` to serve {@link metrics} with. */
  get contentType(): string {
    return this.registry.contentType;
  }

  async onInstall(host: PluginHost): Promise<void> {
    const { createInstruments } = await import('./metrics-instruments.js');
    this.instruments = createInstruments(this.config);
    this.subscription = host.events$.subscribe((event) => this.observe(event));
  }

  onUninstall(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.roundStarts.clear();
  }

  private installed(): MetricsInstruments {
    if (this.instruments) return this.instruments;
    throw new TrellisError('NotStarted', 'MetricsPlugin has no metrics before it is installed', {
      hint: 'Use the instance `app.install(MetricsPlugin)` returns',
    });
  }

  private observe(event: TrellisEvent): void {
    const m = this.instruments;
    if (!m) return;
    switch (event.type) {
      case 'round.started': {
        let rounds = this.roundStarts.get(event.sessionId);
        if (!rounds) this.roundStarts.set(event.sessionId, (rounds = new Map()));
        rounds.set(event.round, performance.now());
        return;
      }
      case 'round.finished': {
        const rounds = this.roundStarts.get(event.sessionId);
        const started = rounds?.get(event.round);
        if (started !== undefined) {
          rounds!.delete(event.round);
          m.modelLatency.observe({ model: event.model }, (performance.now() - started) / 1000);
        }
        // A round that read tools' results is counted under the plugins that caused it, by share
        // (`plugin`, and `owner` where the plugin has one); the agent's own rounds keep the plain series.
        for (const cause of event.causes ?? [undefined]) {
          const labels = {
            model: event.model,
            ...(cause !== undefined && { plugin: cause.plugin }),
            ...(cause?.owner !== undefined && { owner: cause.owner }),
          };
          const share = cause?.share ?? 1;
          m.tokens.inc({ ...labels, type: 'input' }, event.usage.inputTokens * share);
          m.tokens.inc({ ...labels, type: 'output' }, event.usage.outputTokens * share);
          // Parts of the input count, reported where the provider gave them.
          if (event.usage.cachedInputTokens)
            m.tokens.inc({ ...labels, type: 'cached_input' }, event.usage.cachedInputTokens * share);
          if (event.usage.cacheWriteInputTokens)
            m.tokens.inc({ ...labels, type: 'cache_write_input' }, event.usage.cacheWriteInputTokens * share);
        }
        return;
      }
      case 'tool.finished':
        // `owner` only for tools of plugins that declare one (`@Plugin({ owner })`): the others' series keep their labels.
        m.toolLatency.observe(
          {
            tool: event.tool,
            outcome: event.ok ? 'ok' : 'error',
            ...(event.owner !== undefined && { owner: event.owner }),
          },
          event.durationMs / 1000,
        );
        if (!event.ok)
          m.errors.inc({
            code: event.error?.code ?? 'Unknown',
            source: 'tool',
            ...(event.owner !== undefined && { owner: event.owner }),
          });
        return;
      case 'turn.finished':
        this.roundStarts.delete(event.sessionId);
        m.turnLatency.observe({ status: event.status }, event.durationMs / 1000);
        return;
      case 'error':
        m.errors.inc({ code: event.code, source: 'app', ...(event.owner !== undefined && { owner: event.owner }) });
        return;
      default:
        return;
    }
  }
}
