/**
 * `trellis/plugins/retrieval`: the RAG plugin (full-text and vector search over documents)
 * with its config classes, the embedding and index ports, the in-memory vector index, and
 * the pgvector index. See docs/retrieval.md and docs/plugins/retrieval.md.
 */
export { RagPlugin, RAG_TENANT_KEY } from './rag.plugin.js';
export { RagConfig, InlineDocument } from './rag.config.js';
export { EMBEDDING_PROVIDER, type EmbeddingProvider } from './embedding-provider.js';
export { OpenAIEmbeddings, type OpenAIEmbeddingsOptions } from './openai-embeddings.js';
export { VectorIndex, cosineSimilarity } from './vector-index.js';
export type { Passage, PassageHit } from './passage.js';
export {
  RETRIEVAL_INDEX,
  isTenantErasable,
  type RetrievalIndex,
  type RetrievalQuery,
  type RetrievalMode,
  type IndexHit,
  type MetadataFilter,
  type MetadataValue,
  type TenantErasable,
} from './retrieval-index.js';
export {
  PgVectorIndex,
  RRF_K,
  type PgVectorIndexOptions,
  type IndexDocument,
  type SqlClient,
} from './pgvector/index.js';
