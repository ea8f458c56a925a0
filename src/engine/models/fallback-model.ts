import { TrellisError } from '../../errors/trellis-error.js';
import type { ModelProvider, ModelRequest, ModelResponse } from '../../contract/model-provider.js';

/** Reported each time the chain moves from a failed model to the next one. */
export interface FallbackEvent {
  readonly from: ModelProvider;
  readonly to: ModelProvider;
  readonly error: TrellisError;
}

/** Options of `FallbackModel`. */
export interface FallbackModelOptions {
  /** Called before the next model is tried, e.g. to log or count fallbacks. */
  readonly onFallback?: (event: FallbackEvent) => void;
}

/**
 * A `ModelProvider` that tries models in order. A retryable `ModelFailed` error (the
 * provider has already spent its own retries) moves on to the next model; anything else —
 * a bad request, an auth failure, a cancellation — is rethrown at once, since another
 * model would fail the same way or the caller no longer wants the answer.
 *
 * The response's `model` is that of the model that answered, so usage can be summed per
 * model. Deltas a failed model streamed before failing have already reached `onDelta`;
 * listeners that render text can reset on `onFallback`.
 *
 * @example
 * const model = new FallbackModel([new OpenAIModel({ model: 'gpt-4o' }), new AnthropicModel({ model: 'claude-sonnet-4-5' })]);
 */
export class FallbackModel implements ModelProvider {
  /** `fallback(a,b)`, from the names of the models in order. */
  readonly name: string;

  constructor(
    private readonly models: readonly ModelProvider[],
    private readonly options: FallbackModelOptions = {},
  ) {
    if (models.length === 0) {
      throw new TrellisError('InvalidOptions', 'FallbackModel needs at least one model', {
        hint: 'Pass the models to try in order, e.g. new FallbackModel([primary, backup])',
      });
    }
    this.name = `fallback(${models.map((model) => model.name).join(',')})`;
  }

  async call(request: ModelRequest): Promise<ModelResponse> {
    const failures: TrellisError[] = [];
    for (let i = 0; i < this.models.length; i++) {
      const model = this.models[i]!;
      try {
        return await model.call(request);
      } catch (error) {
        if (!TrellisError.is(error, 'ModelFailed') || !error.retryable || request.signal?.aborted) throw error;
        failures.push(error);
        const next = this.models[i + 1];
        if (next) this.options.onFallback?.({ from: model, to: next, error });
      }
    }
    throw this.allFailed(failures);
  }

  /** Keeps the last error's code, flags and hint; the message lists what each model said. */
  private allFailed(failures: readonly TrellisError[]): TrellisError {
    const last = failures[failures.length - 1]!;
    const tried = this.models.map((model) => model.name);
    const reasons = failures.map((failure, i) => `${tried[i]}: ${withoutHint(failure)}`).join('; ');
    return new TrellisError(last.code, `All ${tried.length} models failed (${tried.join(', ')}) — ${reasons}`, {
      kind: last.kind,
      retryable: last.retryable,
      hint: last.hint ?? 'Try again later, or add another model to the fallback chain',
      details: { ...last.details, tried },
      cause: last,
    });
  }
}

/** The message without its appended hint, so the combined message does not repeat hints. */
function withoutHint(error: TrellisError): string {
  const suffix = error.hint ? `. ${error.hint}` : '';
  return suffix && error.message.endsWith(suffix) ? error.message.slice(0, -suffix.length) : error.message;
}
