import type { MetadataFilter, RetrievalMode } from '../retrieval-index.js';
import { filterSql } from './metadata-filter.js';

/** Where the chunks live and how they are indexed; every name checked before it gets here. */
export interface ChunkTable {
  /** `"schema"."table"`, quoted. */
  readonly qualified: string;
  readonly schema: string;
  readonly table: string;
  readonly dimensions: number;
  /** A text search configuration name, e.g. `english`. */
  readonly textSearch: string;
}

/** The constant of reciprocal rank fusion: a passage ranked r adds 1 / (60 + r). */
export const RRF_K = 60;

/** A PostgreSQL identifier Trellis creates: lower case letters, digits and `_`, starting with a letter or `_`. */
export const IDENTIFIER = /^[a-z_][a-z0-9_]{0,47}$/;

export function quoteIdent(name: string): string {
  return `"${name}"`;
}

/** The statements that create the partitioned chunk table and its indexes (idempotent). */
export function schemaStatements(t: ChunkTable): string[] {
  const index = (suffix: string) => quoteIdent(`${t.table}_${suffix}`);
  return [
    'CREATE EXTENSION IF NOT EXISTS vector',
    `CREATE SCHEMA IF NOT EXISTS ${quoteIdent(t.schema)}`,
    `CREATE TABLE IF NOT EXISTS ${t.qualified} (
      tenant text NOT NULL,
      chunk_id text NOT NULL,
      document_id text NOT NULL,
      position integer NOT NULL,
      source text NOT NULL,
      body text NOT NULL,
      metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
      embedding vector(${t.dimensions}) NOT NULL,
      tsv tsvector GENERATED ALWAYS AS (to_tsvector('${t.textSearch}'::regconfig, body)) STORED,
      updated_at timestamptz NOT NULL DEFAULT now(),
      PRIMARY KEY (tenant, chunk_id)
    ) PARTITION BY LIST (tenant)`,
    `CREATE INDEX IF NOT EXISTS ${index('embedding_hnsw')} ON ${t.qualified} USING hnsw (embedding vector_cosine_ops)`,
    `CREATE INDEX IF NOT EXISTS ${index('tsv_gin')} ON ${t.qualified} USING gin (tsv)`,
    `CREATE INDEX IF NOT EXISTS ${index('metadata_gin')} ON ${t.qualified} USING gin (metadata jsonb_path_ops)`,
    `CREATE INDEX IF NOT EXISTS ${index('document')} ON ${t.qualified} (tenant, document_id)`,
  ];
}

/** A parameterised statement. */
export interface Statement {
  readonly text: string;
  readonly params: unknown[];
}

/** What a search asks, with the query's embedding when the mode needs one. */
export interface SearchSpec {
  readonly tenant: string;
  readonly text: string;
  readonly k: number;
  readonly mode: RetrievalMode;
  readonly filter?: MetadataFilter;
}

/**
 * The search statement; `vectorText` is the query's embedding in pgvector's text form, for
 * the modes that rank by it. Every branch is confined to `tenant = $1` (which also prunes the
 * scan to the tenant's partition), and the final rows are joined back on the tenant too.
 * `hybrid` takes the best `candidates` of each ranking and fuses them by reciprocal rank.
 */
export function searchStatement(t: ChunkTable, spec: SearchSpec, vectorText?: string): Statement {
  const params: unknown[] = [spec.tenant];
  const next = (value: unknown) => (params.push(value), `$${params.length}`);
  // The filter's parameters are added once; its clauses are written for a column prefix.
  const filters = filterSql(spec.filter, '\u0000metadata', next);
  const scope = (prefix: string) =>
    [`${prefix}tenant = $1`, ...filters.map((f) => f.replace('\u0000', prefix))].join(' AND ');
  const columns = 'c.chunk_id, c.document_id, c.source, c.body, c.metadata';
  // Any of the query's words, not all (plainto_tsquery ANDs them): a passage matching more
  // ranks higher. The text form of a tsquery reads back unchanged, its lexemes quoted.
  // Only the parameters a statement uses are added: PostgreSQL cannot type one it never sees.
  const tsQuery = () =>
    `(SELECT replace(plainto_tsquery('${t.textSearch}'::regconfig, ${next(spec.text)})::text, ' & ', ' | ')::tsquery AS q) tq`;
  if (spec.mode === 'fulltext') {
    const query = tsQuery();
    return {
      text: `SELECT ${columns}, ts_rank_cd(c.tsv, tq.q)::float8 AS score FROM ${t.qualified} c, ${query} WHERE ${scope('c.')} AND c.tsv @@ tq.q ORDER BY score DESC, c.chunk_id LIMIT ${next(spec.k)}`,
      params,
    };
  }
  const vector = `${next(vectorText)}::vector`;
  if (spec.mode === 'vector') {
    // The inner ORDER BY is the distance operator itself, the one shape the HNSW index serves
    // (ordering by the score, 1 - distance, would sort every row of the tenant); ties are ordered outside.
    return {
      text: `SELECT * FROM (SELECT ${columns}, (1 - (c.embedding <=> ${vector}))::float8 AS score FROM ${t.qualified} c WHERE ${scope('c.')} ORDER BY c.embedding <=> ${vector} LIMIT ${next(spec.k)}) nearest ORDER BY score DESC, chunk_id`,
      params,
    };
  }
  const query = tsQuery();
  const candidates = next(Math.max(spec.k * 4, 20));
  const k = next(spec.k);
  const text = `WITH by_vector AS (
      SELECT chunk_id, row_number() OVER (ORDER BY distance, chunk_id) AS rank FROM (
        SELECT chunk_id, embedding <=> ${vector} AS distance FROM ${t.qualified} WHERE ${scope('')} ORDER BY embedding <=> ${vector} LIMIT ${candidates}
      ) nearest
    ), by_text AS (
      SELECT chunk_id, row_number() OVER (ORDER BY relevance DESC, chunk_id) AS rank FROM (
        SELECT chunk_id, ts_rank_cd(tsv, tq.q) AS relevance FROM ${t.qualified}, ${query}
        WHERE ${scope('')} AND tsv @@ tq.q ORDER BY relevance DESC LIMIT ${candidates}
      ) matching
    ), fused AS (
      SELECT COALESCE(v.chunk_id, f.chunk_id) AS chunk_id,
             COALESCE(1.0 / (${RRF_K} + v.rank), 0) + COALESCE(1.0 / (${RRF_K} + f.rank), 0) AS score
      FROM by_vector v FULL OUTER JOIN by_text f ON v.chunk_id = f.chunk_id
    )
    SELECT ${columns}, fused.score::float8 AS score FROM fused JOIN ${t.qualified} c ON c.tenant = $1 AND c.chunk_id = fused.chunk_id
    ORDER BY fused.score DESC, c.chunk_id LIMIT ${k}`;
  return { text, params };
}
