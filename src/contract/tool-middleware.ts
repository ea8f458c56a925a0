import type { ContextKeySpec } from './context-key.js';
import type { ToolContext } from './plugin-context.js';
import type { ToolErrorInfo, ToolResult } from './tool-result.js';

export { okResult, errorResult, type ToolResult, type ToolErrorInfo } from './tool-result.js';

/** One tool call as middleware sees it. */
export interface ToolInvocation {
  readonly callId: string;
  readonly tool: string;
  readonly plugin: string;
  /** The validated, transformed input (an instance of the tool's input DTO). */
  readonly args: unknown;
  /** The tool's cropped view of the context pool. */
  readonly context: ToolContext;
  /** Aborted on cancellation; middleware may pass a narrower signal down. */
  readonly signal: AbortSignal;
  /** 1 for the first try; retry middleware raises it. */
  readonly attempt: number;
  /**
   * Puts a notice about this call on the app's and the session's event stream, with the
   * call's session, id and tool filled in (e.g. a retry, so the CLI can show it).
   */
  readonly notify: (notice: ToolNotice) => void;
}

/** What middleware may report about a call: a retry, with the error that caused it. */
export type ToolNotice = {
  readonly type: 'tool.retry';
  readonly attempt: number;
  readonly delayMs: number;
  readonly error: ToolErrorInfo;
};

/** Runs the rest of the chain; pass a changed invocation to change what the inner layers see. */
export type NextToolHandler = (invocation?: ToolInvocation) => Promise<ToolResult>;

/**
 * Tool-execution middleware, shaped like a NestJS interceptor. An injectable class; one
 * instance is built per place it is declared, with its options bound to
 * `MIDDLEWARE_OPTIONS`. Throwing is allowed: the pipeline turns it into an error result.
 *
 * @example
 * @injectable()
 * class Audit implements ToolMiddleware {
 *   async intercept(call: ToolInvocation, next: NextToolHandler) { const r = await next(); log(call.tool, r.ok); return r; }
 * }
 */
export interface ToolMiddleware {
  intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult>;
}

/** A middleware class; optional statics describe its options and declared context. */
export interface ToolMiddlewareClass<T extends ToolMiddleware = ToolMiddleware> {
  new (...args: any[]): T;
  /** A class-validator DTO the options are checked against at install. */
  readonly optionsType?: new () => object;
  /** Context keys the middleware reads, added to the declared keys of each tool it wraps. */
  requires?(options: unknown): readonly ContextKeySpec[];
}

/** DI token: the validated options of the middleware being built. */
export const MIDDLEWARE_OPTIONS = Symbol.for('trellis.middleware.options');

/** A middleware and its options, as declared by `@Middleware`, install options or the app. */
export interface MiddlewareDeclaration {
  readonly type: ToolMiddlewareClass;
  readonly options?: unknown;
}
