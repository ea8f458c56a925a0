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
  type ContextKeySpec,
} from 'trellis/plugin';
import { TRELLIS_LOGGER, createLogger } from './logger.js';
import { DEFAULT_REDACT_KEYS, maskSubjects, redact, redactionKey, subjectsOf, type Subjects } from './redact.js';

const LEVELS: readonly Level[] = ['trace', 'debug', 'info', 'warn', 'error', 'fatal'];

/** The host context naming whom a call is about, and what stands for it in the log. */
const SUBJECT_KEYS: readonly (readonly [string, string])[] = [
  ['app.user_id', '[user]'],
  ['app.tenant', '[tenant]'],
];

/** Options of {@link LoggingMiddleware}; every field has a default. */
export class LoggingOptions {
  /** The level of the call records; failures are logged at `warn` at least. Default `'info'`. */
  @IsOptional()
  @IsIn(LEVELS)
  level: Level = 'info';

  /** Key names to redact in addition to {@link DEFAULT_REDACT_KEYS}. Default none. */
  @IsOptional()
  @IsArray()
  @IsString({ each: true })
  redact: string[] = [];
}

/**
 * Writes two structured pino records per tool call: `tool.start` (tool, callId, attempt,
 * redacted args) and `tool.finish` (ok, durationMs, error code and message, or the redacted
 * result value). Records come from a child logger per plugin, so they carry a `plugin`
 * field. The logger is the host's, bound under {@link TRELLIS_LOGGER}, or else a default
 * one writing JSON lines to stdout. Secrets are redacted at any depth by key name:
 * {@link DEFAULT_REDACT_KEYS} plus `redact`. The user and tenant the call is for (`app.user_id`,
 * `app.tenant`, read as optional context) are masked wherever they appear in a record, as
 * `[user]` and `[tenant]`: a log line cannot be erased once written (`app.erase`).
 *
 * @example
 * Trellis.create({ middleware: [{ type: LoggingMiddleware, options: { redact: ['ssn'] } }] })
 */
@injectable()
export class LoggingMiddleware implements ToolMiddleware {
  static readonly optionsType = LoggingOptions;

  /** Whom the call is for, read (optionally) to mask them in what is logged. */
  static requires(): readonly ContextKeySpec[] {
    return SUBJECT_KEYS.map(([key]) => ({ key, optional: true }));
  }

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
    const subjects = subjectsIn(call);
    if (log.isLevelEnabled(this.level)) {
      log[this.level](
        { event: 'tool.start', ...fields, args: maskSubjects(redact(call.args, this.redactKeys), subjects) },
        'tool call started',
      );
    }
    const started = performance.now();
    let result: ToolResult;
    try {
      result = await next();
    } catch (error) {
      const durationMs = Math.round(performance.now() - started);
      // A thrown value is logged as a scrubbed message, never as the object (vendor errors carry request headers).
      log[this.failureLevel](
        {
          event: 'tool.finish',
          ...fields,
          ok: false,
          durationMs,
          error: { message: maskSubjects(describeError(error), subjects) },
        },
        'tool call threw',
      );
      throw error;
    }
    const durationMs = Math.round(performance.now() - started);
    if (result.ok) {
      if (log.isLevelEnabled(this.level)) {
        const value = maskSubjects(redact(result.value, this.redactKeys), subjects);
        log[this.level]({ event: 'tool.finish', ...fields, ok: true, durationMs, result: value }, 'tool call finished');
      }
    } else {
      const { code, message, retryable } = result.error;
      log[this.failureLevel](
        {
          event: 'tool.finish',
          ...fields,
          ok: false,
          durationMs,
          error: { code, message: maskSubjects(redactText(message), subjects), retryable },
        },
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

/** The user and tenant a call is for, from its context, to mask in its records. */
function subjectsIn(call: ToolInvocation): Subjects | undefined {
  const pairs: (readonly [string, string])[] = [];
  for (const [key, mask] of SUBJECT_KEYS) {
    const value = call.context.deps[key];
    if (typeof value === 'string' || typeof value === 'number') pairs.push([String(value), mask]);
  }
  return subjectsOf(pairs);
}
