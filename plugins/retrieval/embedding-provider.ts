/**
 * Turns texts into embedding vectors, one per text, in order. Implementations honour
 * `signal` and throw a `TrellisError` (code `EmbeddingFailed`) whose `retryable` says
 * whether trying again may help.
 */
export interface EmbeddingProvider {
  /** A stable name for logs, e.g. `openai:text-embedding-3-small`. */
  readonly name: string;
  embed(texts: readonly string[], options?: { readonly signal?: AbortSignal }): Promise<number[][]>;
}

/** DI token of the {@link EmbeddingProvider} the RAG plugin's vector search uses. */
export const EMBEDDING_PROVIDER = Symbol.for('trellis.rag.embedding_provider');
