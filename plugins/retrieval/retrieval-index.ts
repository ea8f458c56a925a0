import type { PassageHit } from './passage.js';

/** A metadata value a filter can match: metadata holds scalars only. */
export type MetadataValue = string | number | boolean;

/**
 * A filter on passages' metadata: every field given must match; a list matches any of its
 * values. `{ product: 'billing', lang: ['en', 'de'] }`.
 */
export type MetadataFilter = Readonly<Record<string, MetadataValue | readonly MetadataValue[]>>;

/** How an index ranks: by embeddings, by full text, or both fused (reciprocal rank fusion). */
export type RetrievalMode = 'vector' | 'fulltext' | 'hybrid';

/** One search of a {@link RetrievalIndex}. */
export interface RetrievalQuery {
  /** Whose passages: an index never returns another tenant's. */
  readonly tenant: string;
  readonly text: string;
  /** At most this many passages, best first. */
  readonly k: number;
  readonly mode?: RetrievalMode;
  readonly filter?: MetadataFilter;
  readonly signal?: AbortSignal;
}

/** A passage an index found, with the document it belongs to and its metadata. */
export interface IndexHit extends PassageHit {
  readonly documentId: string;
  readonly metadata: Readonly<Record<string, MetadataValue>>;
}

/**
 * A searchable store of passages partitioned by tenant, bound by the host under
 * {@link RETRIEVAL_INDEX} for `RagPlugin` with `search: 'index'`. `PgVectorIndex` is one
 * (PostgreSQL with pgvector).
 */
export interface RetrievalIndex {
  /** For logs and errors, e.g. `pgvector:public.knowledge_chunks`. */
  readonly name: string;
  search(query: RetrievalQuery): Promise<IndexHit[]>;
}

/** An index that can forget a tenant entirely: what `app.erase({ tenant })` asks of it through `RagPlugin`. */
export interface TenantErasable {
  eraseTenant(tenant: string): Promise<void>;
}

/** Whether an index can erase a tenant. */
export function isTenantErasable(index: RetrievalIndex): index is RetrievalIndex & TenantErasable {
  return typeof (index as Partial<TenantErasable>).eraseTenant === 'function';
}

/** DI token of the {@link RetrievalIndex} `RagPlugin` searches with `search: 'index'`. */
export const RETRIEVAL_INDEX = Symbol.for('trellis.rag.retrieval_index');
