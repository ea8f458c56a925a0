import type { ContentPart } from './content-part.js';

/**
 * A message of the conversation, in a vendor-neutral shape. `content` is always its text;
 * a message with images or files also has `parts` (text parts included, in order), and
 * `content` is then the text parts joined. A tool message whose tool returned
 * `toolContent(...)` keeps the parts as JSON in `content` (see `messageParts`).
 */
export interface ChatMessage {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  /** Text, image and file parts, when the message has more than text. */
  readonly parts?: readonly ContentPart[];
  /** On an assistant message: the tool calls it asked for. */
  readonly toolCalls?: readonly ModelToolCall[];
  /** On a tool message: the call it answers. */
  readonly toolCallId?: string;
  /** On a tool message: the tool's name. */
  readonly name?: string;
}

/** A tool call as the model asked for it; `arguments` is the raw JSON text the model wrote. */
export interface ModelToolCall {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}

/** JSON Schema, as much of it as tool inputs use. */
export type JsonSchema = { readonly [key: string]: unknown };

/** What the model is told about one tool. */
export interface ToolDefinition {
  readonly name: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
}

/** Inference settings; overrides merge field by field (agent default, turn, round). */
export interface InferenceSettings {
  readonly model?: string;
  readonly temperature?: number;
  readonly maxTokens?: number;
  readonly topP?: number;
  readonly reasoningEffort?: 'low' | 'medium' | 'high';
}

/**
 * Tokens of one model call (or a sum of them). `inputTokens` counts every input token,
 * cached or not; `cachedInputTokens` is the part of it read from the provider's prompt
 * cache (billed at a discount), `cacheWriteInputTokens` the part written to the cache
 * (Anthropic bills it at a premium; OpenAI does not report it). Both are absent when the
 * provider reported none.
 */
export interface Usage {
  readonly inputTokens: number;
  readonly outputTokens: number;
  readonly totalTokens: number;
  readonly cachedInputTokens?: number;
  readonly cacheWriteInputTokens?: number;
}

/** A piece of the model's answer as it streams in. */
export type ModelDelta =
  | { readonly type: 'text'; readonly text: string }
  | {
      readonly type: 'tool_call';
      readonly index: number;
      readonly id?: string;
      readonly name?: string;
      readonly argumentsDelta?: string;
    };

/**
 * The turn's typed final answer (`app.agent({ output })`, `send(…, { output })`): a JSON
 * object matching `schema`, the DTO's JSON Schema as `dtoJsonSchema` derives it. A provider
 * with native structured output compiles `schema` with its {@link SchemaDialect} and
 * constrains its answer to it; the kernel validates the answer either way.
 */
export interface OutputFormat {
  /** The DTO's name (letters, digits, `_` and `-`, at most 64), as providers want a schema named. */
  readonly name: string;
  readonly schema: JsonSchema;
}

export interface ModelRequest {
  readonly messages: readonly ChatMessage[];
  readonly tools: readonly ToolDefinition[];
  readonly inference: InferenceSettings;
  readonly signal?: AbortSignal;
  /** Called for each streamed delta, in order; absent when nobody listens. */
  readonly onDelta?: (delta: ModelDelta) => void;
  /** Set when the turn asks for a typed answer: the answer (when the model calls no tool) is a JSON object of this schema. */
  readonly output?: OutputFormat;
}

export interface ModelResponse {
  readonly text: string;
  readonly toolCalls: readonly ModelToolCall[];
  readonly usage: Usage;
  /** The model that answered (a provider may serve several). */
  readonly model: string;
  readonly finishReason?: string;
  /**
   * Set when the model refused to answer (OpenAI's `refusal`, Anthropic's `stop_reason:
   * "refusal"`): why, as the provider put it. The turn then ends `failed` with `ModelRefused`.
   */
  readonly refusal?: string;
}

/**
 * One model call: messages, tools and inference settings in; text, tool calls and usage
 * out. Implementations stream deltas through `onDelta`, honour `signal`, and throw a
 * `TrellisError` with code `ModelFailed` whose `retryable` says whether to try again
 * (rate limits, 5xx, network) or not (bad request, auth).
 */
export interface ModelProvider {
  /** A stable name for logs, usage accounting and fallback reports, e.g. `openai:gpt-4o-mini`. */
  readonly name: string;
  call(request: ModelRequest): Promise<ModelResponse>;
}

/** A schema as one provider takes it, and what of the source it cannot take. */
export interface CompiledSchema {
  readonly schema: JsonSchema;
  /** What the provider cannot express, each with what to change; empty when it can express all of it. */
  readonly problems: readonly string[];
  /** Sent in the provider's strict mode (OpenAI `strict: true`): its answers may carry `null` for optional fields. */
  readonly strict: boolean;
}

/**
 * How a provider takes JSON Schema: one compiler for tool input schemas and one for the
 * typed output's, both pure and cached per schema. `app.agent()` compiles the output DTO and
 * the agent's tools with each of its models' dialects and refuses what one cannot express.
 */
export interface SchemaDialect {
  /** e.g. `openai-strict`, `anthropic`, `conservative`. */
  readonly name: string;
  /** Whether the provider constrains a typed answer itself; otherwise the kernel asks for it in the system prompt. */
  readonly nativeOutput: boolean;
  tool(schema: JsonSchema): CompiledSchema;
  output(schema: JsonSchema): CompiledSchema;
}

/** The optional capability of a provider that says how it takes JSON Schema. */
export interface SchemaAwareProvider extends ModelProvider {
  readonly schemaDialect: SchemaDialect;
}

/** The provider's schema dialect, or undefined when it has none (schemas go as they are; typed output is asked for in the prompt). */
export function schemaDialectOf(model: ModelProvider): SchemaDialect | undefined {
  const dialect = (model as Partial<SchemaAwareProvider>).schemaDialect;
  return typeof dialect === 'object' &&
    dialect !== null &&
    typeof dialect.output === 'function' &&
    typeof dialect.tool === 'function'
    ? dialect
    : undefined;
}

/**
 * Whether a value has the shape of a {@link ModelProvider} (a string `name` and a `call`
 * function): how a host checks a model handed to it in configuration before using it.
 */
export function isModelProvider(value: unknown): value is ModelProvider {
  return (
    typeof value === 'object' &&
    value !== null &&
    typeof (value as ModelProvider).call === 'function' &&
    typeof (value as ModelProvider).name === 'string'
  );
}
