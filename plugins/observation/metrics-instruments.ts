import { Counter, Histogram, Registry, collectDefaultMetrics } from 'prom-client';
import type { MetricsConfig } from './metrics.config.js';

const DEFAULT_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];

/** The metrics `MetricsPlugin` records, in a registry of their own. */
export interface MetricsInstruments {
  readonly registry: Registry;
  readonly modelLatency: Histogram<'model'>;
  readonly toolLatency: Histogram<'tool' | 'outcome'>;
  readonly turnLatency: Histogram<'status'>;
  readonly tokens: Counter<'model' | 'type' | 'plugin' | 'owner'>;
  readonly errors: Counter<'code' | 'source'>;
}

/**
 * Builds the instruments for a config. The only module that imports prom-client: the
 * plugin loads it when it is installed, so importing Trellis never does.
 */
export function createInstruments(config: MetricsConfig): MetricsInstruments {
  const p = config.prefix;
  const buckets = config.latencyBuckets ? [...new Set(config.latencyBuckets)].sort((a, b) => a - b) : DEFAULT_BUCKETS;
  const registry = new Registry();
  const registers = [registry];
  const instruments: MetricsInstruments = {
    registry,
    modelLatency: new Histogram({
      name: `${p}model_latency_seconds`,
      help: 'Latency of one model call, by model',
      labelNames: ['model'],
      buckets,
      registers,
    }),
    toolLatency: new Histogram({
      name: `${p}tool_latency_seconds`,
      help: 'Latency of one tool call, by tool, outcome and owning team',
      labelNames: ['tool', 'outcome', 'owner'],
      buckets,
      registers,
    }),
    turnLatency: new Histogram({
      name: `${p}turn_latency_seconds`,
      help: 'Latency of one turn, by final status',
      labelNames: ['status'],
      buckets,
      registers,
    }),
    tokens: new Counter({
      name: `${p}tokens_total`,
      help: 'Tokens used, by model, type (input, output; cached_input and cache_write_input are parts of input), and the plugin and owning team whose tool results the model call read',
      labelNames: ['model', 'type', 'plugin', 'owner'],
      registers,
    }),
    errors: new Counter({
      name: `${p}errors_total`,
      help: 'Errors, by code, source (app event or tool call) and owning team',
      labelNames: ['code', 'source', 'owner'],
      registers,
    }),
  };
  if (config.processMetrics) collectDefaultMetrics({ register: registry, prefix: p });
  return instruments;
}
