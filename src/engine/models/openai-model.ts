import type OpenAI from 'openai';
import type {
  ChatCompletionChunk,
  ChatCompletionCreateParamsStreaming,
  ChatCompletionTool,
} from 'openai/resources/chat/completions';
import { TrellisError } from '../../errors/trellis-error.js';
import type {
  CompiledSchema,
  JsonSchema,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  SchemaAwareProvider,
  SchemaDialect,
  ToolDefinition,
  Usage,
} from '../../contract/model-provider.js';
import { CONSERVATIVE_DIALECT, OPENAI_STRICT_DIALECT } from './schema-dialects.js';
import { dropNullOptionals } from '../validation/openai-strict-schema.js';
import type { ModelIdentity } from './model-error.js';
import { callProvider, missingApiKeyError } from './provider-call.js';
import { ToolNameCodec } from './tool-name-codec.js';
import { toOpenAIMessages } from './openai-messages.js';
import {
  boundedFetch,
  resolveStreamLimits,
  streamFailedError,
  type ResolvedStreamLimits,
  type StreamLimits,
} from './stream-guard.js';

/** Finish reasons of a response that completed: anything else with tool calls is refused. */
const COMPLETED = new Set(['stop', 'tool_calls', 'function_call']);

type OpenAISdk = typeof import('openai');
let sdk: Promise<OpenAISdk> | undefined;

/** The `openai` package, loaded on the first call rather than when Trellis is imported. */
function loadOpenAISdk(): Promise<OpenAISdk> {
  return (sdk ??= import('openai'));
}

/** Options of `OpenAIModel`; only `model` is required. */
export interface OpenAIModelOptions {
  /** The default model, e.g. `gpt-4o-mini`, `deepseek-chat`, `llama3.1`; an inference override may replace it per call. */
  readonly model: string;
  /** Defaults to the `OPENAI_API_KEY` environment variable; local servers (Ollama, vLLM) need none. */
  readonly apiKey?: string;
  /** Any OpenAI-compatible endpoint, e.g. `https://api.deepseek.com`, `http://localhost:11434/v1`. */
  readonly baseURL?: string;
  /** Retries the SDK makes itself on 408/409/429/5xx and connection faults. Default 2. */
  readonly maxRetries?: number;
  /**
   * Per-attempt limit on waiting for the answer to start (the SDK's `timeout`; default 10
   * minutes). A stream that stalls after it started is bounded only by `request.signal`.
   */
  readonly timeoutMs?: number;
  /** A ready client (custom fetch, proxies, tests); the options above are then ignored except `model`. */
  readonly client?: OpenAI;
  /** Provider name for logs and usage; default `openai:<model>`. */
  readonly name?: string;
  /**
   * How schemas go out and how a typed answer (`output`) is asked for. `native`: OpenAI's
   * structured outputs — `response_format: { type: 'json_schema', json_schema: { strict: true } }`
   * and `strict: true` on every tool whose schema strict mode can express (the strict dialect:
   * every property required, optional ones nullable; `null`s are mapped back before
   * validation). `prompt`: tool schemas in a conservative subset most compatible servers take,
   * and the typed answer asked for in the system prompt, then validated. Default: `native` for
   * OpenAI's own endpoint (no `baseURL`, or `api.openai.com`), `prompt` for any other.
   */
  readonly structuredOutput?: 'native' | 'prompt';
  /**
   * Bounds on the streamed answer: an idle timeout between chunks (default 2 minutes), the
   * longest event-stream line, the largest response, the most tool calls. Line and body size
   * are enforced on the HTTP body when Trellis builds the client (not with `client`).
   */
  readonly stream?: StreamLimits;
}

/** A tool call being assembled from stream deltas. */
interface PendingToolCall {
  id: string;
  name: string;
  arguments: string;
}

/**
 * A `ModelProvider` over the official `openai` client's streaming chat completions. Works
 * with any OpenAI-compatible endpoint through `baseURL` (DeepSeek, Ollama, vLLM).
 *
 * Tool names are sent in the vendor's alphabet: `orders.lookup` goes out as
 * `orders__lookup` and comes back decoded (see `ToolNameCodec`). Image and file parts map
 * as `toOpenAIMessages` says; the request body is a pure function of the messages, so the
 * prefix a session repeats stays byte-identical and OpenAI's automatic prompt caching
 * applies; usage reports `prompt_tokens_details.cached_tokens` as `cachedInputTokens`. Failures are
 * `TrellisError('ModelFailed')`, retryable for rate limits, 5xx and network faults once
 * the SDK's own retries are spent; an aborted `signal` gives `TrellisError('Cancelled')`.
 *
 * @example
 * const model = new OpenAIModel({ model: 'deepseek-chat', baseURL: 'https://api.deepseek.com', apiKey: process.env.DEEPSEEK_API_KEY });
 */
export class OpenAIModel implements SchemaAwareProvider {
  readonly name: string;
  /** How this model takes JSON Schema: `openai-strict` (`structuredOutput: 'native'`) or `conservative`. */
  readonly schemaDialect: SchemaDialect;
  private client: OpenAI | undefined;
  private readonly limits: ResolvedStreamLimits;

  constructor(private readonly options: OpenAIModelOptions) {
    this.name = options.name ?? `openai:${options.model}`;
    this.client = options.client;
    this.limits = resolveStreamLimits(options.stream, 'OpenAIModel');
    const mode =
      options.structuredOutput ?? (isOpenAIEndpoint(options.client?.baseURL ?? options.baseURL) ? 'native' : 'prompt');
    if (mode !== 'native' && mode !== 'prompt') {
      throw new TrellisError(
        'InvalidOptions',
        `OpenAIModel structuredOutput must be 'native' or 'prompt', got ${String(mode)}`,
        { hint: "Pass 'native' for OpenAI's structured outputs, 'prompt' for servers without them, or leave it out" },
      );
    }
    this.schemaDialect = mode === 'native' ? OPENAI_STRICT_DIALECT : CONSERVATIVE_DIALECT;
  }

  async call(request: ModelRequest): Promise<ModelResponse> {
    const model = request.inference.model ?? this.options.model;
    const who: ModelIdentity = { provider: this.name, model, apiKeyEnv: 'OPENAI_API_KEY' };
    const codec = new ToolNameCodec(request.tools.map((tool) => tool.name));
    return callProvider({
      request,
      who,
      limits: this.limits,
      completed: COMPLETED,
      loadSdk: loadOpenAISdk,
      start: async (loaded, signal) => {
        const tools = request.tools.map((tool) => this.schemaDialect.tool(tool.inputSchema));
        const events = await this.getClient(who, loaded).chat.completions.create(
          this.params(request, model, codec, tools),
          { signal },
        );
        return {
          events,
          assembler: new ChunkAssembler(
            model,
            codec,
            request.onDelta,
            this.limits,
            who,
            strictSources(request.tools, tools),
          ),
        };
      },
    });
  }

  private getClient(who: ModelIdentity, loaded: OpenAISdk): OpenAI {
    if (this.client) return this.client;
    const { apiKey, baseURL, maxRetries, timeoutMs } = this.options;
    const key = apiKey ?? process.env.OPENAI_API_KEY;
    if (!key && !baseURL) throw missingApiKeyError(who, 'OpenAIModel');
    // Local OpenAI-compatible servers ignore the key, but the SDK insists on one.
    const fetch = boundedFetch(this.limits, () => ({ ...who, model: this.options.model }));
    this.client = new loaded.OpenAI({
      apiKey: key || 'not-needed',
      baseURL,
      maxRetries: maxRetries ?? 2,
      timeout: timeoutMs,
      fetch,
    });
    return this.client;
  }

  private params(
    request: ModelRequest,
    model: string,
    codec: ToolNameCodec,
    tools: readonly CompiledSchema[],
  ): ChatCompletionCreateParamsStreaming {
    const { temperature, maxTokens, topP, reasoningEffort } = request.inference;
    const params: ChatCompletionCreateParamsStreaming = {
      model,
      messages: toOpenAIMessages(request.messages, codec),
      stream: true,
      stream_options: { include_usage: true },
    };
    if (request.tools.length > 0) params.tools = request.tools.map((tool, at) => toOpenAITool(tool, tools[at]!, codec));
    const output = request.output;
    if (output !== undefined && this.schemaDialect.nativeOutput) {
      params.response_format = {
        type: 'json_schema',
        json_schema: { name: output.name, strict: true, schema: this.schemaDialect.output(output.schema).schema },
      };
    }
    if (temperature !== undefined) params.temperature = temperature;
    // `max_tokens` rather than `max_completion_tokens`: compatible servers only know the former.
    if (maxTokens !== undefined) params.max_tokens = maxTokens;
    if (topP !== undefined) params.top_p = topP;
    if (reasoningEffort !== undefined) params.reasoning_effort = reasoningEffort;
    return params;
  }
}

function toOpenAITool(tool: ToolDefinition, compiled: CompiledSchema, codec: ToolNameCodec): ChatCompletionTool {
  const parameters = compiled.schema as Record<string, unknown>;
  return {
    type: 'function',
    function: compiled.strict
      ? { name: codec.encode(tool.name), description: tool.description, parameters, strict: true }
      : { name: codec.encode(tool.name), description: tool.description, parameters },
  };
}

/** OpenAI's own endpoint: no base URL (the SDK's default), or one on api.openai.com. */
function isOpenAIEndpoint(baseURL: string | undefined): boolean {
  if (baseURL === undefined) return true;
  try {
    return new URL(baseURL).hostname === 'api.openai.com';
  } catch {
    return false;
  }
}

/** The source schemas of the tools sent strict, by name: their arguments are mapped back (a `null` optional → absent). */
function strictSources(
  tools: readonly ToolDefinition[],
  compiled: readonly CompiledSchema[],
): ReadonlyMap<string, JsonSchema> | undefined {
  let sources: Map<string, JsonSchema> | undefined;
  for (let at = 0; at < tools.length; at++)
    if (compiled[at]!.strict) (sources ??= new Map()).set(tools[at]!.name, tools[at]!.inputSchema);
  return sources;
}

/** A strict tool call's arguments as the source schema expects them; text that is not JSON stays as it is, for validation to report. */
function mappedArguments(text: string, source: JsonSchema | undefined): string {
  if (source === undefined) return text;
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return text;
  }
  return JSON.stringify(dropNullOptionals(value, source));
}

/** Folds streamed chunks into one response, forwarding deltas as they arrive. */
class ChunkAssembler {
  private text = '';
  private refusal = '';
  private readonly toolCalls: PendingToolCall[] = [];
  private usage: Usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
  private finishReason: string | undefined;
  /** Characters of text and arguments so far, bounded by `maxResponseBytes`. */
  private size = 0;

  constructor(
    private model: string,
    private readonly codec: ToolNameCodec,
    private readonly onDelta: ModelRequest['onDelta'],
    private readonly limits: ResolvedStreamLimits,
    private readonly who: ModelIdentity,
    private readonly strict: ReadonlyMap<string, JsonSchema> | undefined,
  ) {}

  add(chunk: ChatCompletionChunk): void {
    if (chunk.model) this.model = chunk.model;
    if (chunk.usage) {
      const { prompt_tokens, completion_tokens, total_tokens, prompt_tokens_details } = chunk.usage;
      this.usage = {
        inputTokens: prompt_tokens,
        outputTokens: completion_tokens,
        totalTokens: total_tokens ?? prompt_tokens + completion_tokens,
      };
      // `prompt_tokens` counts the cached ones too; compatible servers often omit the details.
      const cached = prompt_tokens_details?.cached_tokens;
      if (typeof cached === 'number') this.usage = { ...this.usage, cachedInputTokens: cached };
    }
    const choice = chunk.choices[0];
    if (!choice) return;
    if (choice.finish_reason) this.finishReason = choice.finish_reason;
    const { content, tool_calls, refusal } = choice.delta;
    this.count(content);
    if (refusal) {
      // Structured outputs' refusal: the model declined, and says why here instead of in `content`.
      this.count(refusal);
      this.refusal += refusal;
    }
    if (content) {
      this.text += content;
      this.onDelta?.({ type: 'text', text: content });
    }
    for (const piece of tool_calls ?? []) this.addToolCallPiece(piece);
  }

  /** Refuses a response past `maxResponseBytes` characters, however it arrived. */
  private count(piece: string | null | undefined): void {
    this.size += piece?.length ?? 0;
    if (this.size > this.limits.maxResponseBytes)
      throw streamFailedError(
        this.who,
        'size',
        `the response is longer than ${this.limits.maxResponseBytes} characters (stream.maxResponseBytes)`,
      );
  }

  private addToolCallPiece(piece: ChatCompletionChunk.Choice.Delta.ToolCall): void {
    // An index past the bound would make a sparse array of that length (1e9 took the process down).
    if (!Number.isSafeInteger(piece.index) || piece.index < 0 || piece.index >= this.limits.maxToolCalls) {
      throw streamFailedError(
        this.who,
        'index',
        `a streamed tool call has index ${String(piece.index)}; at most ${this.limits.maxToolCalls} calls (indices 0–${this.limits.maxToolCalls - 1}) are taken (stream.maxToolCalls)`,
      );
    }
    this.count(piece.function?.arguments);
    this.count(piece.function?.name);
    const call = (this.toolCalls[piece.index] ??= { id: '', name: '', arguments: '' });
    if (piece.id) call.id = piece.id;
    const wireName = piece.function?.name;
    // Names arrive whole in practice; a fragment is appended in case a server splits one.
    if (wireName) call.name += wireName;
    const argumentsDelta = piece.function?.arguments || undefined;
    if (argumentsDelta) call.arguments += argumentsDelta;
    this.onDelta?.({
      type: 'tool_call',
      index: piece.index,
      id: piece.id || undefined,
      name: wireName ? this.codec.decode(call.name) : undefined,
      argumentsDelta,
    });
  }

  response(): ModelResponse {
    const toolCalls: ModelToolCall[] = [];
    for (const call of this.toolCalls) {
      // Sparse indexes happen only with odd servers; skip the holes.
      if (!call) continue;
      const name = this.codec.decode(call.name);
      toolCalls.push({ id: call.id, name, arguments: mappedArguments(call.arguments || '{}', this.strict?.get(name)) });
    }
    const response: ModelResponse = {
      text: this.text,
      toolCalls,
      usage: this.usage,
      model: this.model,
      finishReason: this.finishReason,
    };
    return this.refusal ? { ...response, refusal: this.refusal } : response;
  }
}
