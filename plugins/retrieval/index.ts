/** The built-in retrieval (RAG) plugin: full-text and vector search over local documents. */
export { RagPlugin, passagesMessage } from './rag.plugin.js';
export { RagConfig, InlineDocument } from './rag.config.js';
export { EMBEDDING_PROVIDER, type EmbeddingProvider } from './embedding-provider.js';
export { OpenAIEmbeddings, type OpenAIEmbeddingsOptions } from './openai-embeddings.js';
export { VectorIndex, cosineSimilarity } from './vector-index.js';
export { FullTextIndex } from './full-text-index.js';
export { splitIntoPassages, type Passage, type PassageHit, type SourceDocument } from './passage.js';
