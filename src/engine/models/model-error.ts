import { TrellisError } from '../../errors/trellis-error.js';

/**
 * A vendor SDK error reduced to the facts the retry policy needs. Each provider adapter
 * fills it from its own SDK's error classes, so this file stays vendor-neutral.
 */
export interface VendorFailure {
  /** The HTTP status, when the server answered. */
  readonly status?: number;
  /** The request never got an answer (DNS, refused connection, dropped socket). */
  readonly connection?: boolean;
  /** The client-side timeout fired. */
  readonly timeout?: boolean;
  /** The vendor's error type, e.g. `overloaded_error`, sent in an error body or a mid-stream error event. */
  readonly type?: string | null;
  readonly message: string;
  readonly cause: unknown;
}

/** Who failed: used in messages and details. */
export interface ModelIdentity {
  /** The provider's name, e.g. `openai:gpt-4o-mini`. */
  readonly provider: string;
  readonly model: string;
  /** The environment variable that holds the key, named in the hint of an auth failure. */
  readonly apiKeyEnv: string;
}

/** Error types a vendor sends inside a stream when the fault is on its side and passes. */
const RETRYABLE_TYPES = new Set([
  'overloaded_error',
  'rate_limit_error',
  'api_error',
  'timeout_error',
  'server_error',
  'rate_limit_exceeded',
]);

/** The SDKs retry the same statuses; the adapter reports a status only after its retries ran out. */
function isRetryableStatus(status: number): boolean {
  return status === 408 || status === 409 || status === 429 || status >= 500;
}

function hintFor(failure: VendorFailure, who: ModelIdentity): string {
  if (failure.timeout) return 'The model did not answer in time: raise timeoutMs, or try again later';
  if (failure.connection) return 'Could not reach the model endpoint: check the network and the baseURL option';
  switch (failure.status) {
    case 401:
      return `Check ${who.apiKeyEnv}, or pass { apiKey } to the model`;
    case 403:
      return `The API key may not use model "${who.model}": check the key's permissions and ${who.apiKeyEnv}`;
    case 404:
      return `Check the model name "${who.model}" and the baseURL option`;
    case 400:
    case 422:
      return 'The vendor rejected the request: check the messages, tool schemas and inference settings sent';
    case 429:
      return 'Rate limited after retries: slow down, raise maxRetries, or add a fallback model';
    default:
      return failure.status !== undefined && failure.status >= 500
        ? 'The vendor had a server fault after retries: try again later, or add a fallback model'
        : 'Check the vendor error above';
  }
}

/**
 * Turns a vendor failure into the one error a `ModelProvider` throws: code `ModelFailed`,
 * `retryable` for rate limits, timeouts, 408/409, 5xx and connection faults; not for bad
 * requests or auth. Fallback and retry layers rely on that flag alone.
 */
export function modelFailedError(failure: VendorFailure, who: ModelIdentity): TrellisError {
  const retryable =
    failure.timeout === true ||
    failure.connection === true ||
    (failure.status !== undefined && isRetryableStatus(failure.status)) ||
    (failure.type != null && RETRYABLE_TYPES.has(failure.type));
  const status = failure.status === undefined ? '' : ` (HTTP ${failure.status})`;
  return new TrellisError('ModelFailed', `Model call to ${who.provider} failed${status}: ${failure.message}`, {
    kind: retryable ? 'system' : 'user',
    retryable,
    hint: hintFor(failure, who),
    details: { provider: who.provider, model: who.model, status: failure.status, type: failure.type ?? undefined },
    cause: failure.cause,
  });
}

/** The error every provider throws when its call is aborted through `request.signal`. */
export function modelCancelledError(provider: string, cause?: unknown): TrellisError {
  return new TrellisError('Cancelled', `Model call to ${provider} was cancelled`, {
    hint: 'The request signal was aborted; start a new call if the answer is still needed',
    details: { provider },
    cause,
  });
}
