import type { ChatMessage, InferenceSettings, JsonSchema, ToolDefinition } from './model-provider.js';
import type { ToolErrorInfo } from './tool-result.js';

/** The request the transform chain and `llm.before` shape before the model call. */
export interface InferenceRequest {
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolDefinition[];
  readonly inference: InferenceSettings;
}

/** A tool call as hooks see it at `tool.gate` and `tool.before_call`. */
export interface ToolCallInfo {
  readonly callId: string;
  readonly tool: string;
  readonly plugin: string;
  /** The tool's `@Tool({ tags })`, so policies can act on kinds of tools. */
  readonly tags: readonly string[];
  /** The arguments as parsed from the model's JSON (not yet validated), or the raw text if unparsable; `argsOf(call)` reads them as an object without a cast. */
  readonly args: unknown;
  readonly round: number;
}

/** What `tool.after_call`, `tool.error` and `memory.write` handlers see of a finished call. */
export type ToolCallOutcome = { readonly kind: 'tool_result'; readonly call: ToolCallInfo } & (
  | { readonly ok: true; readonly value: unknown; readonly error?: undefined }
  | { readonly ok: false; readonly value?: undefined; readonly error: ToolErrorInfo }
);

/** What `memory.write` handlers see at the end of a turn. */
export interface TurnExchange {
  readonly kind: 'exchange';
  readonly input: string;
  readonly reply: string | undefined;
  readonly status: string;
}

/**
 * A tool offered for a round, as `tool.select` handlers see it: a plain description, not
 * the tool itself. Handlers narrow or reorder the list; names they return that are not
 * candidates are ignored.
 */
export interface ToolCandidate {
  readonly name: string;
  readonly plugin: string;
  readonly description: string;
  readonly tags: readonly string[];
  /** The JSON Schema of the tool's input, as the model sees it. */
  readonly schema: JsonSchema;
}

/** `session.start`: a session opened (`resumed` when it was loaded from the store). */
export interface SessionStartPayload {
  readonly sessionId: string;
  readonly resumed: boolean;
}

/** `session.end`. */
export interface SessionEndPayload {
  readonly sessionId: string;
}

/** `task.start`: the turn's input (after `message.received`) and its index. */
export interface TaskStartPayload {
  readonly input: string;
  readonly turn: number;
}

/** `task.end`: how the turn ended. Runs for every turn that reached `task.start`. */
export interface TaskEndPayload {
  readonly input: string;
  readonly status: string;
  readonly reply: string | undefined;
}

/** `memory.read`: the turn's input and its messages so far. */
export interface MemoryReadPayload {
  readonly input: string;
  readonly messages: readonly ChatMessage[];
}

/** `tool.register`: the round about to start. */
export interface ToolRegisterPayload {
  readonly round: number;
}
