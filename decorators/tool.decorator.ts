import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';

export interface ToolOptions {
  /** Unique across the app, conventionally `<plugin>.<verb>` (e.g. `db.search`). */
  readonly name: string;
  /** A prompt for the model: say when to use the tool and when not to. */
  readonly description: string;
  /** A class-validator DTO: the model sees its JSON Schema; arguments are validated against it. */
  readonly input: new () => object;
  /** A DTO the result is checked against; a mismatch is a `ToolOutput` error result. */
  readonly output?: new () => object;
  readonly tags?: readonly string[];
  /** Aborts the call's signal and returns a `ToolTimeout` result after this long. */
  readonly timeoutMs?: number;
  /** The most characters of this tool's result the model reads; wins over the agent's `maxToolResultChars`. */
  readonly maxResultChars?: number;
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
