/**
 * DI token: the `TracerProvider` (from `@opentelemetry/api`) the OpenTelemetry plugin
 * takes its tracer from. Unbound, it uses the global provider (`trace.getTracerProvider()`).
 *
 * @example
 * Trellis.create({ providers: [{ provide: OTEL_TRACER_PROVIDER, useValue: provider }] });
 */
export const OTEL_TRACER_PROVIDER = Symbol.for('trellis.otel.tracer_provider');
