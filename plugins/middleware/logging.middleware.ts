import { performance } from 'node:perf_hooks';
import { IsArray, IsIn, IsOptional, IsString } from 'class-validator';
import type { Level, Logger } from 'pino';
import {
  inject,
  injectable,
  optional,
  MIDDLEWARE_OPTIONS,
  describeError,
  redactText,
  type NextToolHandler,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from 'trellis/plugin';
import { TRELLIS_LOGGER, createLogger } from './logger.js';
import { DEFAULT_REDACT_KEYS, redact, redactionKey } from './redact.js';

const LEVELS: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** Options of {@link LoggingMiddleware}; every field has a default. */
export class LoggingOptions {
  /** The level of the call records; failures are logged at `warn` at least. Default `'info'`. */
  @IsOptional() @IsIn(LEVELS)
  level: Level = 'info';

  /** Key names to redact in addition to {@link DEFAULT_REDACT_KEYS}. Default none. */
  @IsOptional() @IsArray() @IsString({ each: true })
  redact: string[] = [];
}

/**
 * Writes two structured pino records per tool call: `tool.start` (tool, callId, attempt,
 * redacted args) and `tool.finish` (ok, durationMs, error code and message, or the redacted
 * result value). Records come from a child logger per plugin, so they carry a `plugin`
 * field. The logger is the host's, bound under {@link TRELLIS_LOGGER}, or else a default
 * one writing JSON lines to stdout. Secrets are redacted at any depth by key name:
 * {@link DEFAULT_REDACT_KEYS} plus `redact`.
 *
 * @example
 * Trellis.create({ middleware: [{ type: LoggingMiddleware, options: { redact: ['ssn'] } }] })
 */
@injectable()
export class LoggingMiddleware implements ToolMiddleware {
  static readonly optionsType = LoggingOptions;

  private readonly level: Level;
  private readonly failureLevel: Level;
  private readonly redactKeys: ReadonlySet<string>;
  private readonly logger: Logger;
  private readonly pluginLoggers = new Map<string, Logger>();

  constructor(
    @inject(MIDDLEWARE_OPTIONS) @optional() options: Partial<LoggingOptions> | undefined,
    @inject(TRELLIS_LOGGER) @optional() logger?: Logger,
  ) {
    this.level = options?.level ?? 'info';
    this.failureLevel = LEVELS.indexOf(this.level) < LEVELS.indexOf('warn') ? 'warn' : this.level;
    this.redactKeys = new Set([...DEFAULT_REDACT_KEYS, ...(options?.redact ?? [])].map(redactionKey));
    this.logger = logger ?? createLogger({ level: this.level });
  }

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    const log = this.loggerFor(call.plugin);
    const fields = { tool: call.tool, callId: call.callId, attempt: call.attempt };
    if (log.isLevelEnabled(this.level)) {
      log[this.level]({ event: 'tool.start', ...fields, args: redact(call.args, this.redactKeys) }, 'tool call started');
    }
    const started = performance.now();
    let result: ToolResult;
    try {
      result = await next();
    } catch (error) {
      const durationMs = Math.round(performance.now() - started);
      // A thrown value is logged as a scrubbed message, never as the object (vendor errors carry request headers).
      log[this.failureLevel]({ event: 'tool.finish', ...fields, ok: false, durationMs, error: { message: describeError(error) } }, 'tool call threw');
      throw error;
    }
    const durationMs = Math.round(performance.now() - started);
    if (result.ok) {
      if (log.isLevelEnabled(this.level)) {
        const value = redact(result.value, this.redactKeys);
        log[this.level]({ event: 'tool.finish', ...fields, ok: true, durationMs, result: value }, 'tool call finished');
      }
    } else {
      const { code, message, retryable } = result.error;
      log[this.failureLevel](
        { event: 'tool.finish', ...fields, ok: false, durationMs, error: { code, message: redactText(message), retryable } },
        'tool call failed',
      );
    }
    return result;
  }

  private loggerFor(plugin: string): Logger {
    let log = this.pluginLoggers.get(plugin);
    if (!log) {
      log = this.logger.child({ plugin });
      this.pluginLoggers.set(plugin, log);
    }
    return log;
  }
}
