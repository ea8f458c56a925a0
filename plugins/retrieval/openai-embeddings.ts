import type OpenAI from 'openai';
import { TrellisError } from 'trellis/plugin';
import type { EmbeddingProvider } from './embedding-provider.js';

type OpenAISdk = typeof import('openai');

/** Options of {@link OpenAIEmbeddings}. */
export interface OpenAIEmbeddingsOptions {
  /** Default `text-embedding-3-small`. */
  readonly model?: string;
  /** Default `OPENAI_API_KEY`; local servers (Ollama, vLLM) need none. */
  readonly apiKey?: string;
  /** Any OpenAI-compatible endpoint, e.g. `http://localhost:11434/v1`. */
  readonly baseURL?: string;
  /** Ask for shorter vectors (text-embedding-3 models). */
  readonly dimensions?: number;
  /** Texts per request. Default 128. */
  readonly batchSize?: number;
  /** The SDK's retries of 408/409/429/5xx and connection errors. Default 2. */
  readonly maxRetries?: number;
  readonly timeoutMs?: number;
}

/**
 * An {@link EmbeddingProvider} on the official `openai` client, for OpenAI or any
 * endpoint that speaks its `/embeddings` wire format. Vectors are asked for as floats
 * (not the SDK's default base64), which every compatible server supports.
 *
 * @example
 * Trellis.create({ providers: [{ provide: EMBEDDING_PROVIDER, useValue: new OpenAIEmbeddings({ baseURL: 'http://localhost:11434/v1', model: 'nomic-embed-text' }) }] });
 */
export class OpenAIEmbeddings implements EmbeddingProvider {
  readonly name: string;
  private readonly model: string;
  private client: OpenAI | undefined;
  /** The `openai` package, loaded on the first `embed` rather than when Trellis is imported. */
  private sdk: OpenAISdk | undefined;

  constructor(private readonly options: OpenAIEmbeddingsOptions = {}) {
    this.model = options.model ?? 'text-embedding-3-small';
    this.name = `openai:${this.model}`;
  }

  async embed(texts: readonly string[], options: { readonly signal?: AbortSignal } = {}): Promise<number[][]> {
    const sdk = (this.sdk ??= await import('openai'));
    const client = this.getClient(sdk);
    const size = this.options.batchSize ?? 128;
    const out: number[][] = [];
    for (let start = 0; start < texts.length; start += size) {
      const batch = texts.slice(start, start + size);
      try {
        const response = await client.embeddings.create(
          {
            model: this.model,
            input: batch,
            encoding_format: 'float',
            ...(this.options.dimensions ? { dimensions: this.options.dimensions } : {}),
          },
          { signal: options.signal },
        );
        const ordered = [...response.data].sort((a, b) => a.index - b.index);
        if (ordered.length !== batch.length)
          throw new TrellisError(
            'EmbeddingFailed',
            `${this.name} returned ${ordered.length} embeddings for ${batch.length} texts`,
            { kind: 'system' },
          );
        for (const item of ordered) out.push(item.embedding);
      } catch (error) {
        throw this.toTrellisError(error, sdk);
      }
    }
    return out;
  }

  private getClient(sdk: OpenAISdk): OpenAI {
    if (this.client) return this.client;
    const { apiKey, baseURL, maxRetries, timeoutMs } = this.options;
    const key = apiKey ?? process.env.OPENAI_API_KEY;
    if (!key && !baseURL) {
      throw new TrellisError('EmbeddingFailed', `${this.name} has no API key`, {
        hint: 'Set OPENAI_API_KEY, or pass { apiKey } or { baseURL } to OpenAIEmbeddings',
      });
    }
    // Local OpenAI-compatible servers ignore the key, but the SDK insists on one.
    this.client = new sdk.OpenAI({
      apiKey: key || 'not-needed',
      baseURL,
      maxRetries: maxRetries ?? 2,
      timeout: timeoutMs,
    });
    return this.client;
  }

  private toTrellisError(error: unknown, sdk: OpenAISdk): TrellisError {
    if (TrellisError.is(error)) return error;
    const message = error instanceof Error ? error.message : String(error);
    if (error instanceof sdk.APIUserAbortError)
      return new TrellisError('Cancelled', `${this.name}: the embedding request was cancelled`, { cause: error });
    const connection = error instanceof sdk.APIConnectionError || error instanceof sdk.APIConnectionTimeoutError;
    const status = error instanceof sdk.APIError ? error.status : undefined;
    const retryable =
      connection || status === 408 || status === 409 || status === 429 || (status !== undefined && status >= 500);
    return new TrellisError(
      'EmbeddingFailed',
      `${this.name} failed${status ? ` with HTTP ${status}` : ''}: ${message}`,
      {
        kind: 'system',
        retryable,
        hint:
          status === 401 || status === 403
            ? 'Check the API key'
            : connection
              ? 'Check the network and the baseURL option'
              : retryable
                ? 'Try again later'
                : 'Check the model name and the input',
        details: { provider: this.name, status },
        cause: error,
      },
    );
  }
}
