/** Built-in observation plugins: Prometheus metrics, OpenTelemetry spans, token accounting. */
export { MetricsPlugin } from './metrics.plugin.js';
export { MetricsConfig } from './metrics.config.js';
export { OpenTelemetryPlugin } from './otel.plugin.js';
export { OpenTelemetryConfig } from './otel.config.js';
export { OTEL_TRACER_PROVIDER } from './otel-tokens.js';
export { GEN_AI, GEN_AI_OPERATION } from './gen-ai-attributes.js';
export { TokenAccountingPlugin, SESSION_TOKENS_KEY } from './token-accounting.plugin.js';
export { TokenAccountingConfig } from './token-accounting.config.js';
export { InMemoryTokenUsageStore, TOKEN_USAGE_STORE } from './token-usage-store.js';
export type { TokenUsageStore } from './token-usage-store.js';
export { EMPTY_TOTALS, type TokenTotals } from './token-usage.js';
