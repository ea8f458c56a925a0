import { TrellisError } from '../../errors/trellis-error.js';
import type { ModelResponse } from '../../contract/model-provider.js';
import type { ModelIdentity } from './model-error.js';

/**
 * Bounds on one streamed model response, the same for every vendor adapter. A stream that
 * breaks one ends the call with a retryable `ModelFailed`, and no tool of it runs.
 */
export interface StreamLimits {
  /**
   * End the call when the stream sends nothing for this long: between chunks, and from the
   * answer's start to its first chunk. Default 120000 (two minutes); 0 turns it off. Raise it
   * for a model that thinks silently for longer.
   */
  readonly idleTimeoutMs?: number;
  /** The longest line of the event stream, in bytes. Default 4 MiB. */
  readonly maxLineBytes?: number;
  /** The largest response body, in bytes (and its text and arguments, in characters). Default 32 MiB. */
  readonly maxResponseBytes?: number;
  /** The most tool calls one response may carry (a streamed call index must be below it). Default 128. */
  readonly maxToolCalls?: number;
}

/** {@link StreamLimits} with every default filled in. */
export type ResolvedStreamLimits = Required<StreamLimits>;

const DEFAULTS: ResolvedStreamLimits = {
  idleTimeoutMs: 120_000,
  maxLineBytes: 4 * 1024 * 1024,
  maxResponseBytes: 32 * 1024 * 1024,
  maxToolCalls: 128,
};

/**
 * The limits an adapter runs with.
 *
 * @throws TrellisError `InvalidOptions` for a limit that is not a whole number (0 or more for the timeout, 1 or more otherwise).
 */
export function resolveStreamLimits(limits: StreamLimits | undefined, where: string): ResolvedStreamLimits {
  const out = { ...DEFAULTS, ...limits };
  for (const key of Object.keys(DEFAULTS) as (keyof ResolvedStreamLimits)[]) {
    const value = out[key];
    const least = key === 'idleTimeoutMs' ? 0 : 1;
    if (!Number.isSafeInteger(value) || value < least) {
      throw new TrellisError(
        'InvalidOptions',
        `${where}: stream.${key} must be a whole number of at least ${least}, got ${String(value)}`,
        {
          hint: `Leave it out for the default (${DEFAULTS[key]})`,
        },
      );
    }
  }
  return out;
}

/** Why a stream was refused: said in the error's message and its `details.stream`. */
export type StreamFault = 'incomplete' | 'truncated' | 'idle' | 'line' | 'size' | 'index' | 'format';

/** The retryable `ModelFailed` for a stream that did not end normally. */
export function streamFailedError(who: ModelIdentity, fault: StreamFault, message: string): TrellisError {
  return new TrellisError('ModelFailed', `Model call to ${who.provider} failed: ${message}`, {
    kind: 'system',
    retryable: true,
    hint:
      fault === 'idle'
        ? 'The model stopped sending; try again, or raise the stream.idleTimeoutMs option for a slow model'
        : fault === 'format'
          ? "Check the baseURL, and whether a proxy or a sign-in page answers in the provider's place; the call can be tried again"
          : 'The response was not used (no tool of it ran); try again, or add a fallback model',
    details: { provider: who.provider, model: who.model, stream: fault },
  });
}

/**
 * Refuses a response that did not complete normally: the stream ended without its finish
 * reason (cut off), or the vendor stopped it early (`length`, `max_tokens`, a content filter)
 * while it carried tool calls, whose arguments may then be cut. A text reply stopped at the
 * token limit is kept, with its `finishReason`.
 */
export function assertCompleted(response: ModelResponse, who: ModelIdentity, normal: ReadonlySet<string>): void {
  const reason = response.finishReason;
  if (reason === undefined)
    throw streamFailedError(who, 'incomplete', 'the stream ended before the response completed (no finish reason)');
  if (response.toolCalls.length > 0 && !normal.has(reason)) {
    throw streamFailedError(
      who,
      'truncated',
      `the response stopped early (${reason}) while it was asking for ${response.toolCalls.length} tool call(s)`,
    );
  }
}

/**
 * A `fetch` for a vendor SDK whose response bodies are bounded: a line of the event stream
 * longer than `maxLineBytes`, or a body larger than `maxResponseBytes`, fails the read with a
 * retryable `ModelFailed` (and cancels the body, closing the connection) instead of being
 * buffered whole. A successful status with an HTML page for a body fails at once (`format`).
 */
export function boundedFetch(
  limits: ResolvedStreamLimits,
  who: () => ModelIdentity,
  base: typeof fetch = globalThis.fetch,
): typeof fetch {
  return async (input, init) => {
    const response = await base(input, init);
    // An HTML page is never an API's answer, whatever its status says: a proxy, a captive portal, a wrong baseURL.
    if (response.ok && /^\s*(text\/html|application\/xhtml\+xml)\b/i.test(response.headers.get('content-type') ?? '')) {
      await response.body?.cancel().catch(() => undefined);
      throw streamFailedError(
        who(),
        'format',
        `the provider answered ${response.status} with an HTML page (${response.headers.get('content-type')}), not an API response`,
      );
    }
    if (!response.body) return response;
    const body = response.body.pipeThrough(byteLimits(limits, who));
    return new Response(body, { status: response.status, statusText: response.statusText, headers: response.headers });
  };
}

function byteLimits(limits: ResolvedStreamLimits, who: () => ModelIdentity): TransformStream<Uint8Array, Uint8Array> {
  let total = 0;
  let line = 0;
  return new TransformStream({
    transform(chunk, controller) {
      total += chunk.byteLength;
      if (total > limits.maxResponseBytes) {
        controller.error(
          streamFailedError(
            who(),
            'size',
            `the response is larger than ${limits.maxResponseBytes} bytes (stream.maxResponseBytes)`,
          ),
        );
        return;
      }
      // The current line's length, carried across chunks; every line of this chunk is checked.
      let start = 0;
      let longest = 0;
      for (let nl = chunk.indexOf(10); nl !== -1; nl = chunk.indexOf(10, start)) {
        longest = Math.max(longest, line + nl - start);
        line = 0;
        start = nl + 1;
      }
      line += chunk.byteLength - start;
      if (Math.max(longest, line) > limits.maxLineBytes) {
        controller.error(
          streamFailedError(
            who(),
            'line',
            `a line of the event stream is longer than ${limits.maxLineBytes} bytes (stream.maxLineBytes)`,
          ),
        );
        return;
      }
      controller.enqueue(chunk);
    },
  });
}

/**
 * The events of `source`, ending with `onIdle()`'s error when none arrives for `ms` (0: no
 * limit). `onIdle` should abort the request, so the pending read settles and the connection closes.
 */
export async function* withIdleTimeout<T>(
  source: AsyncIterable<T>,
  ms: number,
  onIdle: () => Error,
): AsyncGenerator<T> {
  if (ms <= 0) {
    yield* source;
    return;
  }
  const iterator = source[Symbol.asyncIterator]();
  while (true) {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const idle = new Promise<never>((_, reject) => {
      timer = setTimeout(() => reject(onIdle()), ms);
    });
    const next = iterator.next();
    // The read left behind when the timer wins settles after the abort; nobody waits for it.
    next.catch(() => undefined);
    let result: IteratorResult<T>;
    try {
      result = await Promise.race([next, idle]);
    } finally {
      clearTimeout(timer);
    }
    if (result.done) return;
    yield result.value;
  }
}
