import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';

export interface ToolOptions {
  /** Unique across the app, conventionally `<plugin>.<verb>` (e.g. `db.search`). */
  readonly name: string;
  /** A prompt for the model: say when to use the tool and when not to. */
  readonly description: string;
  /** A class-validator DTO: the model sees its JSON Schema; arguments are validated against it. */
  readonly input?: new () => object;
  /**
   * Instead of `input`: a raw JSON Schema (e.g. a tool from an MCP server). The model is
   * offered it unchanged (`$ref`, `$defs`, `oneOf` intact) and arguments are checked against
   * it exactly with ajv; the method receives the parsed arguments as they are.
   */
  readonly inputSchema?: { readonly [key: string]: unknown };
  /** A DTO the result is checked against; a mismatch is a `ToolOutput` error result. */
  readonly output?: new () => object;
  readonly tags?: readonly string[];
  /** Aborts the call's signal and returns a `ToolTimeout` result after this long. */
  readonly timeoutMs?: number;
  /** The most characters of this tool's result the model reads; wins over the agent's `maxToolResultChars`. */
  readonly maxResultChars?: number;
  /**
   * Running it twice has the same effect as once (a read, or a write keyed by
   * `ctx.idempotencyKey`): the same as `onCrash: 'retry'`.
   */
  readonly idempotent?: boolean;
  /**
   * What becomes of a call that a crash cut off mid-run (it started, and no result was
   * journalled): `retry` runs it again when the turn goes on, with the same
   * `ctx.idempotencyKey`; `ask` (the default, unless `idempotent: true`) parks it as a
   * `retry` / `skip` decision, since only a human can say whether its effect happened.
   * Calls that finished are never run again, and calls that never started simply run.
   */
  readonly onCrash?: 'retry' | 'ask';
}

export interface ToolMetadata {
  readonly method: string;
  readonly options: ToolOptions;
}

/** Declares a method as a tool the model can call: `(input: InputDto, ctx: ToolContext) => result`. */
export function Tool(options: ToolOptions): MethodDecorator {
  return (target, method) => {
    appendMetadata<ToolMetadata>(METADATA.tools, target.constructor, { method: String(method), options });
  };
}
