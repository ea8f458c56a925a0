import { inject } from 'inversify';
import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { Subscription } from 'rxjs';
import { Plugin } from '../../decorators/index.js';
import type { TrellisEvent } from '../../src/events/trellis-event.js';
import type { PluginLifecycle } from '../../src/plugin/plugin-lifecycle.js';
import type { PluginHost } from '../../src/plugin/plugin-host.js';
import { PLUGIN_CONFIG } from '../../src/plugin/plugin-tokens.js';
import { MetricsConfig } from './metrics.config.js';

const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/**
 * Prometheus metrics of the app's turns, from the event stream (`app.events$`), in a
 * registry of its own (never prom-client's global one), so two apps in one process
 * never mix their numbers:
 *
 * - `<prefix>model_latency_seconds{model}`: one model call (round start to round end);
 * - `<prefix>tool_latency_seconds{tool,outcome}`: one tool call, `outcome` `ok` or `error`;
 * - `<prefix>turn_latency_seconds{status}`: one turn;
 * - `<prefix>tokens_total{model,type}`: tokens used, `type` `input` or `output`;
 * - `<prefix>errors_total{code,source}`: error events (`source="app"`) and failed tool
 *   calls (`source="tool"`), by error code.
 *
 * It needs no hooks, so it observes every agent whatever its `plugins` filter.
 *
 * @example
 * const { instance } = await app.install(MetricsPlugin);
 * http.get('/metrics', async (_, res) => res.type((instance as MetricsPlugin).contentType).send(await (instance as MetricsPlugin).metrics()));
 */
@Plugin({ name: 'metrics', version: '1.0.0', description: 'Prometheus metrics: latency per model and tool, tokens, errors', config: MetricsConfig })
export class MetricsPlugin implements PluginLifecycle {
  /** The plugin's own registry; register more metrics here to expose them together. */
  readonly registry = new Registry();
  private readonly modelLatency: Histogram<'model'>;
  private readonly toolLatency: Histogram<'tool' | 'outcome'>;
  private readonly turnLatency: Histogram<'status'>;
  private readonly tokens: Counter<'model' | 'type'>;
  private readonly errors: Counter<'code' | 'source'>;
  /** Round start times by session, then round number; cleared when the turn ends. */
  private readonly roundStarts = new Map<string, Map<number, number>>();
  private subscription: Subscription | undefined;

  constructor(@inject(PLUGIN_CONFIG) config: MetricsConfig) {
    const p = config.prefix;
    const buckets = config.latencyBuckets ? [...new Set(config.latencyBuckets)].sort((a, b) => a - b) : DEFAULT_BUCKETS;
    const registers = [this.registry];
    this.modelLatency = new Histogram({ name: `${p}model_latency_seconds`, help: 'Latency of one model call, by model', labelNames: ['model'], buckets, registers });
    this.toolLatency = new Histogram({ name: `${p}tool_latency_seconds`, help: 'Latency of one tool call, by tool and outcome', labelNames: ['tool', 'outcome'], buckets, registers });
    this.turnLatency = new Histogram({ name: `${p}turn_latency_seconds`, help: 'Latency of one turn, by final status', labelNames: ['status'], buckets, registers });
    this.tokens = new Counter({ name: `${p}tokens_total`, help: 'Tokens used, by model and type (input or output)', labelNames: ['model', 'type'], registers });
    this.errors = new Counter({ name: `${p}errors_total`, help: 'Errors, by code and source (app event or tool call)', labelNames: ['code', 'source'], registers });
    if (config.processMetrics) collectDefaultMetrics({ register: this.registry, prefix: p });
  }

  /** The Prometheus text exposition of every metric in {@link registry}. */
  metrics(): Promise<string> {
    return this.registry.metrics();
  }

  /** The `Content-Type` to serve {@link metrics} with. */
  get contentType(): string {
    return this.registry.contentType;
  }

  onInstall(host: PluginHost): void {
    this.subscription = host.events$.subscribe((event) => this.observe(event));
  }

  onUninstall(): void {
    this.subscription?.unsubscribe();
    this.subscription = undefined;
    this.roundStarts.clear();
  }

  private observe(event: TrellisEvent): void {
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
          this.modelLatency.observe({ model: event.model }, (performance.now() - started) / 1000);
        }
        this.tokens.inc({ model: event.model, type: 'input' }, event.usage.inputTokens);
        this.tokens.inc({ model: event.model, type: 'output' }, event.usage.outputTokens);
        return;
      }
      case 'tool.finished':
        this.toolLatency.observe({ tool: event.tool, outcome: event.ok ? 'ok' : 'error' }, event.durationMs / 1000);
        if (!event.ok) this.errors.inc({ code: event.error?.code ?? 'Unknown', source: 'tool' });
        return;
      case 'turn.finished':
        this.roundStarts.delete(event.sessionId);
        this.turnLatency.observe({ status: event.status }, event.durationMs / 1000);
        return;
      case 'error':
        this.errors.inc({ code: event.code, source: 'app' });
        return;
      default:
        return;
    }
  }
}
