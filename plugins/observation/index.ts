/**
 * `trellis/plugins/observation`: Prometheus metrics, OpenTelemetry spans and token
 * accounting, with their config classes and tokens. See docs/plugins/observation.md.
 */
export { MetricsPlugin } from './metrics.plugin.js';
export { MetricsConfig } from './metrics.config.js';
export { OpenTelemetryPlugin } from './otel.plugin.js';
export { OpenTelemetryConfig } from './otel.config.js';
export { OTEL_TRACER_PROVIDER } from './otel-tokens.js';
export { TokenAccountingPlugin, SESSION_TOKENS_KEY } from './token-accounting.plugin.js';
export { TokenAccountingConfig } from './token-accounting.config.js';
export { InMemoryTokenUsageStore, TOKEN_USAGE_STORE, type TokenUsageStore } from './token-usage-store.js';
export type { TokenTotals } from './token-usage.js';
