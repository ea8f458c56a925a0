import { TrellisError } from '../../errors/trellis-error.js';
import type { ModelRequest, ModelResponse } from '../../contract/model-provider.js';
import { modelCancelledError, modelFailedError, type ModelIdentity } from './model-error.js';
import { assertCompleted, streamFailedError, withIdleTimeout, type ResolvedStreamLimits } from './stream-guard.js';

/**
 * The error classes the official `openai` and `@anthropic-ai/sdk` packages both export under
 * these names; an adapter over either SDK maps its failures through them.
 */
export interface SdkErrorClasses {
  readonly APIError: abstract new (...args: never[]) => {
    readonly status: number | undefined;
    readonly type: string | null | undefined;
  };
  readonly APIUserAbortError: abstract new (...args: never[]) => object;
  readonly APIConnectionError: abstract new (...args: never[]) => object;
  readonly APIConnectionTimeoutError: abstract new (...args: never[]) => object;
}

/** Folds a vendor's stream events into one response, forwarding deltas as they arrive. */
export interface StreamAssembler<Event> {
  add(event: Event): void;
  response(): ModelResponse;
}

/** One streamed call of a vendor adapter: what differs between vendors, for {@link callProvider} to run. */
export interface ProviderCall<Sdk extends SdkErrorClasses, Event> {
  readonly request: ModelRequest;
  readonly who: ModelIdentity;
  readonly limits: ResolvedStreamLimits;
  /** The finish reasons of a response that completed: anything else with tool calls is refused. */
  readonly completed: ReadonlySet<string>;
  /** The vendor SDK, loaded on the first call rather than when Trellis is imported. */
  loadSdk(): Promise<Sdk>;
  /** Sends the request with `signal` (the caller's and the idle watchdog's) and returns its events. */
  start(
    sdk: Sdk,
    signal: AbortSignal,
  ): Promise<{ readonly events: AsyncIterable<Event>; readonly assembler: StreamAssembler<Event> }>;
}

/**
 * Runs one streamed model call the way every vendor adapter does: refuses an aborted signal
 * before loading anything, ends a stream that stays silent for `limits.idleTimeoutMs`, checks
 * that the response completed, and turns whatever went wrong into `Cancelled` or `ModelFailed`
 * (see {@link toModelError}).
 */
export async function callProvider<Sdk extends SdkErrorClasses, Event>(
  call: ProviderCall<Sdk, Event>,
): Promise<ModelResponse> {
  const { request, who, limits } = call;
  if (request.signal?.aborted) throw modelCancelledError(who.provider, request.signal.reason);
  let loaded: Sdk | undefined;
  // Aborted when the stream goes idle; the caller's signal aborts it too.
  const idle = new AbortController();
  let stalled: TrellisError | undefined;
  try {
    loaded = await call.loadSdk();
    const signal = request.signal ? AbortSignal.any([request.signal, idle.signal]) : idle.signal;
    const { events, assembler } = await call.start(loaded, signal);
    const onIdle = () => {
      stalled = streamFailedError(who, 'idle', `the stream sent nothing for ${limits.idleTimeoutMs} ms`);
      idle.abort(stalled);
      return stalled;
    };
    for await (const event of withIdleTimeout(events, limits.idleTimeoutMs, onIdle)) assembler.add(event);
    // The SDKs end the iteration quietly when the signal aborts mid-stream.
    if (request.signal?.aborted) throw modelCancelledError(who.provider, request.signal.reason);
    if (stalled) throw stalled;
    const response = assembler.response();
    assertCompleted(response, who, call.completed);
    return response;
  } catch (error) {
    throw stalled ?? toModelError(error, who, request.signal, loaded);
  }
}

/**
 * A failed call as the one error a `ModelProvider` throws. A `TrellisError` (also one a bounded
 * body raised, which the SDKs wrap as a connection error's cause) passes through; an aborted
 * signal is `Cancelled`; SDK timeouts, connection faults and API errors become `ModelFailed`
 * with what the retry policy needs. `sdk` is the SDK when it could be loaded; without it only
 * cancellation is told apart.
 */
export function toModelError(
  error: unknown,
  who: ModelIdentity,
  signal: AbortSignal | undefined,
  sdk: SdkErrorClasses | undefined,
): TrellisError {
  if (TrellisError.is(error)) return error;
  const cause = (error as { cause?: unknown } | null)?.cause;
  if (TrellisError.is(cause)) return cause;
  if (signal?.aborted || (sdk && error instanceof sdk.APIUserAbortError))
    return modelCancelledError(who.provider, error);
  const message = error instanceof Error ? error.message : String(error);
  if (sdk) {
    if (error instanceof sdk.APIConnectionTimeoutError)
      return modelFailedError({ timeout: true, message, cause: error }, who);
    if (error instanceof sdk.APIConnectionError)
      return modelFailedError({ connection: true, message, cause: error }, who);
    if (error instanceof sdk.APIError)
      return modelFailedError({ status: error.status, type: error.type, message, cause: error }, who);
  }
  return modelFailedError({ message, cause: error }, who);
}

/** The `ModelFailed` of an adapter that has no API key to build its client with. */
export function missingApiKeyError(who: ModelIdentity, adapter: string): TrellisError {
  return new TrellisError('ModelFailed', `${who.provider} has no API key`, {
    hint: `Set ${who.apiKeyEnv}, or pass { apiKey } to ${adapter}`,
    details: { provider: who.provider },
  });
}
