import { asTrellisError, TrellisError } from '../../errors/trellis-error.js';
import type {
  ChatMessage,
  ModelProvider,
  ModelRequest,
  ModelResponse,
  ModelToolCall,
  Usage,
} from '../../contract/model-provider.js';
import { modelCancelledError } from './model-error.js';
import { hasMediaParts, messageParts } from '../../contract/content-part.js';

/** One tool call in a scripted reply. `args` objects are JSON-encoded; a string is sent raw (so it may be invalid JSON). */
export interface ScriptedToolCall {
  readonly name: string;
  readonly args: unknown;
  /** Defaults to `call_<n>`, unique per `ScriptedModel` instance. */
  readonly id?: string;
}

/** What the model answers: a string is a plain text answer. */
export type ScriptedReply =
  | string
  | {
      readonly text?: string;
      readonly toolCalls?: readonly ScriptedToolCall[];
      /** Missing fields are estimated at about four characters per token. */
      readonly usage?: Partial<Usage>;
      /** The model refuses (as OpenAI's `refusal` or Anthropic's `stop_reason: "refusal"`), saying why. */
      readonly refusal?: string;
    };

/** A reply list entry; an `Error` is thrown instead of answering, to script failures. */
export type ScriptedStep = ScriptedReply | Error;

/**
 * Computes the reply to the call with the given zero-based index (calls cancelled before
 * their reply are not counted); may throw to script a failure.
 */
export type ScriptedReplyFn = (request: ModelRequest, callIndex: number) => ScriptedReply | Promise<ScriptedReply>;

/** Options of `ScriptedModel`. */
export interface ScriptedModelOptions {
  /** The provider name, also reported as the response's `model`. Default `scripted`. */
  readonly name?: string;
  /** Wait this long before answering (abortable), to simulate latency. */
  readonly delayMs?: number;
  /**
   * How many of the latest requests `calls` keeps; older ones are dropped, so a
   * long-running host or a 10,000-turn test does not hold every request. Default 1,000.
   */
  readonly keepCalls?: number;
}

/** Requests a `ScriptedModel` keeps in `calls` unless `keepCalls` says otherwise. */
export const DEFAULT_KEEP_CALLS = 1_000;

const CHARS_PER_TOKEN = 4;
/** What an image or file part counts for in the estimated input tokens. */
const MEDIA_TOKENS = 256;
const NO_CALLS: readonly ScriptedToolCall[] = [];
/** Text is streamed in about this many pieces, so consumers see real streaming. */
const TEXT_CHUNKS = 3;

/**
 * A deterministic `ModelProvider` for tests and offline runs: answers from a list of
 * replies, in order, or from a function of the request. It streams through `onDelta`,
 * honours `signal`, and records the latest requests it got (by reference) in `calls` —
 * image and file parts included (read them with `messageParts(message)`), so tests see
 * what a real model would be shown —
 * the last `keepCalls` (default 1,000); `callCount` counts them all.
 *
 * @example
 * const model = new ScriptedModel([
 *   { toolCalls: [{ name: 'orders.lookup', args: { id: 'A1' } }] },
 *   'Order A1 shipped yesterday.',
 * ]);
 */
export class ScriptedModel implements ModelProvider {
  readonly name: string;
  /** The latest requests received (at most `keepCalls`), oldest first; the same objects the caller passed. */
  readonly calls: ModelRequest[] = [];
  /** How many requests this model received in all, including those `calls` no longer holds. */
  callCount = 0;
  private readonly delayMs: number;
  private readonly keepCalls: number;
  private nextCallId = 1;
  /** Calls cancelled before their reply do not use one up, so a retried call gets the same reply. */
  private repliesUsed = 0;

  constructor(
    private readonly script: readonly ScriptedStep[] | ScriptedReplyFn,
    options: ScriptedModelOptions = {},
  ) {
    this.name = options.name ?? 'scripted';
    this.delayMs = options.delayMs ?? 0;
    this.keepCalls = options.keepCalls ?? DEFAULT_KEEP_CALLS;
    if (!Number.isSafeInteger(this.keepCalls) || this.keepCalls < 0) {
      throw new TrellisError(
        'InvalidOptions',
        `ScriptedModel keepCalls must be a whole number of 0 or more, got ${String(options.keepCalls)}`,
        { hint: 'Pass e.g. { keepCalls: 100 }' },
      );
    }
  }

  async call(request: ModelRequest): Promise<ModelResponse> {
    this.callCount += 1;
    if (this.keepCalls > 0) {
      if (this.calls.length >= this.keepCalls) this.calls.shift();
      this.calls.push(request);
    }
    this.throwIfAborted(request.signal);
    if (this.delayMs > 0) await this.delay(request.signal);
    const replying = this.replyFor(request, this.repliesUsed++);
    // A reply function that answers synchronously costs no extra await.
    const reply = replying instanceof Promise ? await replying : replying;
    this.throwIfAborted(request.signal);
    return this.answer(typeof reply === 'string' ? { text: reply } : reply, request);
  }

  private replyFor(request: ModelRequest, callIndex: number): ScriptedReply | Promise<ScriptedReply> {
    if (typeof this.script === 'function') {
      let reply: ScriptedReply | PromiseLike<ScriptedReply>;
      try {
        reply = this.script(request, callIndex);
      } catch (error) {
        throw this.replyFailed(error, callIndex);
      }
      // The rejection handler is made only for a reply that is a promise: a synchronous reply allocates no closure.
      return isPromiseLike(reply)
        ? Promise.resolve(reply).then(undefined, (error: unknown) => {
            throw this.replyFailed(error, callIndex);
          })
        : reply;
    }
    if (callIndex >= this.script.length) {
      throw new TrellisError(
        'ModelFailed',
        `ScriptedModel "${this.name}" has no reply for call #${callIndex + 1}: its script holds ${this.script.length}`,
        {
          hint: 'Add a reply for every model call the test makes, or pass a function that computes replies',
          details: { provider: this.name, callIndex },
        },
      );
    }
    const step = this.script[callIndex]!;
    if (step instanceof Error)
      throw asTrellisError(step, 'ModelFailed', `ScriptedModel "${this.name}" failed on call #${callIndex + 1}`);
    return step;
  }

  private replyFailed(error: unknown, callIndex: number): TrellisError {
    return asTrellisError(
      error,
      'ModelFailed',
      `ScriptedModel "${this.name}" reply function failed on call #${callIndex + 1}`,
    );
  }

  private answer(reply: Exclude<ScriptedReply, string>, request: ModelRequest): ModelResponse {
    const text = reply.text ?? '';
    const calls = reply.toolCalls ?? NO_CALLS;
    // Made at its final length: the response's list stays in the turn's messages, and a list
    // grown by `push` kept room for 17 calls.
    const toolCalls = new Array<ModelToolCall>(calls.length);
    let outputChars = text.length;
    for (let index = 0; index < calls.length; index++) {
      const call = calls[index]!;
      const args = typeof call.args === 'string' ? call.args : JSON.stringify(call.args ?? {});
      toolCalls[index] = { id: call.id ?? `call_${this.nextCallId++}`, name: call.name, arguments: args };
      outputChars += call.name.length + args.length;
    }
    if (request.onDelta) this.stream(request.onDelta, text, toolCalls);
    const response: ModelResponse = {
      text,
      toolCalls,
      usage: this.usage(reply.usage, request.messages, outputChars),
      model: this.name,
      finishReason: toolCalls.length > 0 ? 'tool_calls' : 'stop',
    };
    return reply.refusal === undefined
      ? response
      : { ...response, toolCalls: [], finishReason: 'refusal', refusal: reply.refusal };
  }

  private stream(
    onDelta: NonNullable<ModelRequest['onDelta']>,
    text: string,
    toolCalls: readonly ModelToolCall[],
  ): void {
    const size = Math.max(1, Math.ceil(text.length / TEXT_CHUNKS));
    for (let at = 0; at < text.length; at += size) onDelta({ type: 'text', text: text.slice(at, at + size) });
    toolCalls.forEach((call, index) => {
      onDelta({ type: 'tool_call', index, id: call.id, name: call.name });
      // Two pieces, so consumers that assemble arguments are exercised.
      const half = Math.ceil(call.arguments.length / 2);
      if (half > 0) onDelta({ type: 'tool_call', index, argumentsDelta: call.arguments.slice(0, half) });
      if (call.arguments.length > half)
        onDelta({ type: 'tool_call', index, argumentsDelta: call.arguments.slice(half) });
    });
  }

  private usage(given: Partial<Usage> | undefined, messages: readonly ChatMessage[], outputChars: number): Usage {
    let inputTokens = given?.inputTokens;
    if (inputTokens === undefined) {
      let inputChars = 0;
      let mediaTokens = 0;
      for (const message of messages) {
        if (!hasMediaParts(message)) {
          inputChars += message.content.length;
          continue;
        }
        // Bytes are not text: an image or a file counts a flat MEDIA_TOKENS.
        for (const part of messageParts(message)) {
          if (part.type === 'text') inputChars += part.text.length;
          else mediaTokens += MEDIA_TOKENS;
        }
      }
      inputTokens = Math.ceil(inputChars / CHARS_PER_TOKEN) + mediaTokens;
    }
    const outputTokens = given?.outputTokens ?? Math.ceil(outputChars / CHARS_PER_TOKEN);
    const usage: Usage = { inputTokens, outputTokens, totalTokens: given?.totalTokens ?? inputTokens + outputTokens };
    if (given?.cachedInputTokens === undefined && given?.cacheWriteInputTokens === undefined) return usage;
    return {
      ...usage,
      ...(given.cachedInputTokens !== undefined && { cachedInputTokens: given.cachedInputTokens }),
      ...(given.cacheWriteInputTokens !== undefined && { cacheWriteInputTokens: given.cacheWriteInputTokens }),
    };
  }

  private throwIfAborted(signal: AbortSignal | undefined): void {
    if (signal?.aborted) throw modelCancelledError(this.name, signal.reason);
  }

  private delay(signal: AbortSignal | undefined): Promise<void> {
    return new Promise((resolve, reject) => {
      const onAbort = (): void => {
        clearTimeout(timer);
        reject(modelCancelledError(this.name, signal?.reason));
      };
      const timer = setTimeout(() => {
        signal?.removeEventListener('abort', onAbort);
        resolve();
      }, this.delayMs);
      signal?.addEventListener('abort', onAbort, { once: true });
    });
  }
}

function isPromiseLike<T>(value: T | PromiseLike<T>): value is PromiseLike<T> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
