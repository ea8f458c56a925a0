import type Anthropic from '@anthropic-ai/sdk';
import type { MessageCreateParamsStreaming, RawMessageStreamEvent, Tool } from '@anthropic-ai/sdk/resources/messages';
import { TrellisError } from '../../errors/trellis-error.js';
import type {
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  SchemaAwareProvider,
  SchemaDialect,
  Usage,
} from '../../contract/model-provider.js';
import { ANTHROPIC_DIALECT, ANTHROPIC_PROMPT_DIALECT } from './schema-dialects.js';
import type { ModelIdentity } from './model-error.js';
import { callProvider, missingApiKeyError } from './provider-call.js';
import { ToolNameCodec } from './tool-name-codec.js';
import { addCacheBreakpoints, toAnthropicMessages, type AnthropicPromptCache } from './anthropic-messages.js';
import {
  boundedFetch,
  resolveStreamLimits,
  streamFailedError,
  type ResolvedStreamLimits,
  type StreamLimits,
} from './stream-guard.js';

/** Stop reasons of a message that completed: anything else with tool calls is refused. */
const COMPLETED = new Set(['end_turn', 'tool_use', 'stop_sequence']);

type AnthropicSdk = typeof import('@anthropic-ai/sdk');
let sdk: Promise<AnthropicSdk> | undefined;

/** The `@anthropic-ai/sdk` package, loaded on the first call rather than when Trellis is imported. */
function loadAnthropicSdk(): Promise<AnthropicSdk> {
  return (sdk ??= import('@anthropic-ai/sdk'));
}

/** Options of `AnthropicModel`; only `model` is required. */
export interface AnthropicModelOptions {
  /** The default model, e.g. `claude-sonnet-4-5`; an inference override may replace it per call. */
  readonly model: string;
  /** Defaults to the `ANTHROPIC_API_KEY` environment variable. */
  readonly apiKey?: string;
  /** A proxy or compatible endpoint; the SDK appends `/v1/messages`. */
  readonly baseURL?: string;
  /** Retries the SDK makes itself on 408/409/429/5xx and connection faults. Default 2. */
  readonly maxRetries?: number;
  /** `max_tokens` when the inference settings give none: Anthropic requires one. Default 1024. */
  readonly maxTokens?: number;
  /**
   * Per-attempt limit on waiting for the answer to start (the SDK's `timeout`; default 10
   * minutes). A stream that stalls after it started is bounded only by `request.signal`.
   */
  readonly timeoutMs?: number;
  /** A ready client (custom fetch, proxies, tests); the connection options above are then ignored. */
  readonly client?: Anthropic;
  /** Provider name for logs and usage; default `anthropic:<model>`. */
  readonly name?: string;
  /**
   * Prompt caching: `cache_control` breakpoints on the stable prefix (tools, system, the
   * transcript before the newest user message, the last block). Default on, all four, 5m;
   * `false` sends none. See `AnthropicPromptCache`.
   */
  readonly promptCache?: AnthropicPromptCache;
  /**
   * How a typed answer (`output`) is asked for. `native` (default): Anthropic's structured
   * outputs, `output_config: { format: { type: 'json_schema', schema } }` in its dialect (no
   * numeric or length bounds, no recursive DTOs; validation after the reply enforces the rest).
   * `prompt`: asked for in the system prompt and validated (for proxies and older models
   * without structured outputs).
   */
  readonly structuredOutput?: 'native' | 'prompt';
  /**
   * Bounds on the streamed answer: an idle timeout between events (default 2 minutes), the
   * longest event-stream line, the largest response, the most tool calls. Line and body size
   * are enforced on the HTTP body when Trellis builds the client (not with `client`).
   */
  readonly stream?: StreamLimits;
}

/**
 * A `ModelProvider` over the official `@anthropic-ai/sdk`, streaming the Messages API.
 *
 * Mapping: system messages are joined into the `system` parameter; assistant tool calls
 * become `tool_use` blocks; tool messages become `tool_result` blocks of a user message,
 * consecutive ones merged into one message as the API requires. Tool names are sent in
 * the vendor's alphabet (`orders.lookup` → `orders__lookup`) and decoded on the way back
 * (see `ToolNameCodec`). `reasoningEffort` is not sent: extended thinking needs a token
 * budget, not an effort level. Image and file parts become `image` and `document` blocks
 * (see `toAnthropicMessages`). Prompt caching: `cache_control` breakpoints on the stable
 * prefix (see `promptCache`); usage reports `cachedInputTokens` (cache reads) and
 * `cacheWriteInputTokens` (cache writes), both counted in `inputTokens`.
 *
 * Failures are `TrellisError('ModelFailed')`, retryable for rate limits, overload, 5xx and
 * network faults once the SDK's own retries are spent; an aborted `signal` gives
 * `TrellisError('Cancelled')`.
 *
 * @example
 * const model = new AnthropicModel({ model: 'claude-sonnet-4-5', maxTokens: 4096 });
 */
export class AnthropicModel implements SchemaAwareProvider {
  readonly name: string;
  /** How this model takes JSON Schema: `anthropic` (`structuredOutput: 'native'`) or `anthropic-prompt`. */
  readonly schemaDialect: SchemaDialect;
  private client: Anthropic | undefined;
  private readonly limits: ResolvedStreamLimits;

  constructor(private readonly options: AnthropicModelOptions) {
    this.name = options.name ?? `anthropic:${options.model}`;
    this.client = options.client;
    this.limits = resolveStreamLimits(options.stream, 'AnthropicModel');
    const mode = options.structuredOutput ?? 'native';
    if (mode !== 'native' && mode !== 'prompt') {
      throw new TrellisError(
        'InvalidOptions',
        `AnthropicModel structuredOutput must be 'native' or 'prompt', got ${String(mode)}`,
        {
          hint: "Pass 'native' for Anthropic's structured outputs, 'prompt' for endpoints without them, or leave it out",
        },
      );
    }
    this.schemaDialect = mode === 'native' ? ANTHROPIC_DIALECT : ANTHROPIC_PROMPT_DIALECT;
  }

  async call(request: ModelRequest): Promise<ModelResponse> {
    const model = request.inference.model ?? this.options.model;
    const who: ModelIdentity = { provider: this.name, model, apiKeyEnv: 'ANTHROPIC_API_KEY' };
    const codec = new ToolNameCodec(request.tools.map((tool) => tool.name));
    return callProvider({
      request,
      who,
      limits: this.limits,
      completed: COMPLETED,
      loadSdk: loadAnthropicSdk,
      start: async (loaded, signal) => {
        const events = await this.getClient(who, loaded).messages.create(this.params(request, model, codec), {
          signal,
        });
        return { events, assembler: new EventAssembler(model, codec, request.onDelta, this.limits, who) };
      },
    });
  }

  private getClient(who: ModelIdentity, loaded: AnthropicSdk): Anthropic {
    if (this.client) return this.client;
    const { apiKey, baseURL, maxRetries, timeoutMs } = this.options;
    const key = apiKey ?? process.env.ANTHROPIC_API_KEY;
    if (!key) throw missingApiKeyError(who, 'AnthropicModel');
    const fetch = boundedFetch(this.limits, () => ({ ...who, model: this.options.model }));
    this.client = new loaded.Anthropic({
      apiKey: key,
      baseURL,
      maxRetries: maxRetries ?? 2,
      timeout: timeoutMs,
      fetch,
    });
    return this.client;
  }

  private params(request: ModelRequest, model: string, codec: ToolNameCodec): MessageCreateParamsStreaming {
    const { temperature, maxTokens, topP } = request.inference;
    const { system, messages, newestUser } = toAnthropicMessages(request.messages, codec);
    const tools = request.tools.map((tool): Tool => ({
      name: codec.encode(tool.name),
      description: tool.description,
      input_schema: this.schemaDialect.tool(tool.inputSchema).schema as Tool.InputSchema,
    }));
    const cache = this.options.promptCache;
    addCacheBreakpoints({ system, messages, tools }, newestUser, cache);
    const params: MessageCreateParamsStreaming = {
      model,
      max_tokens: maxTokens ?? this.options.maxTokens ?? 1024,
      messages,
      stream: true,
    };
    // Without caching the system prompt goes as plain text, as before blocks could carry a breakpoint.
    if (system.length > 0) params.system = cache === false ? system[0]!.text : system;
    if (tools.length > 0) params.tools = tools;
    if (temperature !== undefined) params.temperature = temperature;
    if (topP !== undefined) params.top_p = topP;
    if (request.output !== undefined && this.schemaDialect.nativeOutput) {
      params.output_config = {
        format: { type: 'json_schema', schema: this.schemaDialect.output(request.output.schema).schema },
      };
    }
    return params;
  }
}

/** A tool call being assembled; `block` is the content-block index the events refer to. */
interface PendingToolCall {
  readonly index: number;
  readonly id: string;
  readonly name: string;
  arguments: string;
  /** The input given whole in `content_block_start`, used when no JSON deltas follow. */
  readonly initialInput: unknown;
}

/** Folds stream events into one response, forwarding deltas as they arrive. */
class EventAssembler {
  private text = '';
  private readonly toolCalls: PendingToolCall[] = [];
  private readonly toolCallsByBlock = new Map<number, PendingToolCall>();
  private inputTokens = 0;
  private outputTokens = 0;
  private cacheRead: number | undefined;
  private cacheWrite: number | undefined;
  private stopReason: string | undefined;
  /** Why the model refused, when `stop_reason` is `refusal` (`stop_details.explanation`). */
  private refusalNote: string | undefined;
  /** Characters of text and arguments so far, bounded by `maxResponseBytes`. */
  private size = 0;

  constructor(
    private model: string,
    private readonly codec: ToolNameCodec,
    private readonly onDelta: ModelRequest['onDelta'],
    private readonly limits: ResolvedStreamLimits,
    private readonly who: ModelIdentity,
  ) {}

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

  add(event: RawMessageStreamEvent): void {
    switch (event.type) {
      case 'message_start':
        this.model = event.message.model || this.model;
        this.inputTokens = event.message.usage.input_tokens ?? 0;
        this.outputTokens = event.message.usage.output_tokens ?? 0;
        this.addCacheUsage(event.message.usage);
        break;
      case 'content_block_start':
        this.assertBlockIndex(event.index, event.type);
        if (event.content_block.type === 'tool_use')
          this.startToolCall(event.index, event.content_block.id, event.content_block.name, event.content_block.input);
        else if (event.content_block.type === 'text' && event.content_block.text)
          this.addText(event.content_block.text);
        break;
      case 'content_block_delta':
        this.assertBlockIndex(event.index, event.type);
        if (event.delta.type === 'text_delta') this.addText(event.delta.text);
        else if (event.delta.type === 'input_json_delta') this.addArguments(event.index, event.delta.partial_json);
        break;
      case 'content_block_stop':
        this.assertBlockIndex(event.index, event.type);
        break;
      case 'message_delta':
        if (event.delta.stop_reason) this.stopReason = event.delta.stop_reason;
        if (event.delta.stop_details?.type === 'refusal')
          this.refusalNote = event.delta.stop_details.explanation ?? undefined;
        // message_delta usage is cumulative; input_tokens appears there only on some servers.
        if (event.usage.input_tokens != null) this.inputTokens = event.usage.input_tokens;
        this.outputTokens = event.usage.output_tokens;
        this.addCacheUsage(event.usage);
        break;
    }
  }

  /** Cache counts as `message_start` or (cumulative) `message_delta` report them. */
  private addCacheUsage(usage: {
    readonly cache_read_input_tokens?: number | null;
    readonly cache_creation_input_tokens?: number | null;
  }): void {
    if (usage.cache_read_input_tokens != null) this.cacheRead = usage.cache_read_input_tokens;
    if (usage.cache_creation_input_tokens != null) this.cacheWrite = usage.cache_creation_input_tokens;
  }

  private addText(text: string): void {
    this.count(text);
    this.text += text;
    this.onDelta?.({ type: 'text', text });
  }

  /** A content block's index must be a whole number: a call whose input went to no block, or to another, would run without it. */
  private assertBlockIndex(index: unknown, type: string): void {
    if (!Number.isSafeInteger(index) || (index as number) < 0)
      throw streamFailedError(
        this.who,
        'index',
        `a ${type} event has no valid content block index (${JSON.stringify(index) ?? 'none'})`,
      );
  }

  private startToolCall(block: number, id: string, wireName: string, initialInput: unknown): void {
    if (this.toolCallsByBlock.has(block))
      throw streamFailedError(this.who, 'index', `a second tool_use block started at content block ${block}`);
    if (this.toolCalls.length >= this.limits.maxToolCalls) {
      throw streamFailedError(
        this.who,
        'index',
        `the response asks for more than ${this.limits.maxToolCalls} tool calls (stream.maxToolCalls)`,
      );
    }
    this.count(wireName);
    const call: PendingToolCall = {
      index: this.toolCalls.length,
      id,
      name: this.codec.decode(wireName),
      arguments: '',
      initialInput,
    };
    this.toolCalls.push(call);
    this.toolCallsByBlock.set(block, call);
    this.onDelta?.({ type: 'tool_call', index: call.index, id, name: call.name });
  }

  private addArguments(block: number, json: string): void {
    const call = this.toolCallsByBlock.get(block);
    // Input for a block that never started as a tool_use: dropping it would run some call without its input.
    if (!call)
      throw streamFailedError(
        this.who,
        'index',
        `an input_json_delta for content block ${block}, where no tool_use block started`,
      );
    if (!json) return;
    this.count(json);
    call.arguments += json;
    this.onDelta?.({ type: 'tool_call', index: call.index, argumentsDelta: json });
  }

  /**
   * Anthropic's `input_tokens` leaves out the tokens read from or written to the cache;
   * Trellis's `inputTokens` counts all of them, as OpenAI's `prompt_tokens` does.
   */
  private usage(): Usage {
    const read = this.cacheRead ?? 0;
    const written = this.cacheWrite ?? 0;
    const inputTokens = this.inputTokens + read + written;
    const usage: Usage = { inputTokens, outputTokens: this.outputTokens, totalTokens: inputTokens + this.outputTokens };
    if (this.cacheRead === undefined && this.cacheWrite === undefined) return usage;
    return { ...usage, cachedInputTokens: read, cacheWriteInputTokens: written };
  }

  response(): ModelResponse {
    if (this.stopReason === 'refusal') {
      // The model (or its safety classifier) stopped the answer: what it wrote is cut short, and any tool call with it is dropped.
      const refusal = this.refusalNote ?? (this.text.trim() || 'The model declined to answer (stop_reason: refusal)');
      return {
        text: this.text,
        toolCalls: [],
        usage: this.usage(),
        model: this.model,
        finishReason: this.stopReason,
        refusal,
      };
    }
    const toolCalls: ModelToolCall[] = this.toolCalls.map((call) => ({
      id: call.id,
      name: call.name,
      arguments: call.arguments || JSON.stringify(call.initialInput ?? {}),
    }));
    return {
      text: this.text,
      toolCalls,
      usage: this.usage(),
      model: this.model,
      finishReason: this.stopReason,
    };
  }
}
