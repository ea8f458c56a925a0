/** The pgvector index: PostgreSQL as a tenant-partitioned retrieval index with hybrid search. */
export { PgVectorIndex, type PgVectorIndexOptions, type IndexDocument } from './pg-vector-index.js';
export type { SqlClient } from './sql-client.js';
export { RRF_K } from './pg-vector-sql.js';
