import { createRequire } from 'node:module';
import type { DestinationStream, Level, Logger, pino as Pino } from 'pino';

/**
 * DI token for the host's pino logger. Bind it (e.g. through `Trellis.create({ providers })`)
 * so tool-call records land in the application's own log; unbound, `LoggingMiddleware`
 * creates a default logger writing JSON lines to stdout.
 */
export const TRELLIS_LOGGER = Symbol.for('trellis.logger');

/** Options of {@link createLogger}. */
export interface CreateLoggerOptions {
  /** The lowest level written; `'info'` by default. */
  readonly level?: Level | 'silent';
  /** Where JSON lines go; stdout by default. Tests pass an in-memory stream. */
  readonly destination?: DestinationStream;
  /** Bindings added to every record, e.g. `{ service: 'billing' }`. */
  readonly base?: Record<string, unknown>;
}

/**
 * Makes a pino logger with Trellis's defaults: ISO timestamps and a `trellis` name.
 *
 * @example
 * const lines: string[] = [];
 * const logger = createLogger({ destination: { write: (line) => void lines.push(line) } });
 */
export function createLogger(options: CreateLoggerOptions = {}): Logger {
  // pino (CommonJS) is required on first use, not when Trellis is imported; `require` keeps this synchronous.
  const pino = createRequire(import.meta.url)('pino') as typeof Pino;
  const settings = {
    name: 'trellis',
    level: options.level ?? 'info',
    timestamp: pino.stdTimeFunctions.isoTime,
    ...(options.base ? { base: options.base } : {}),
  };
  return options.destination ? pino(settings, options.destination) : pino(settings);
}
