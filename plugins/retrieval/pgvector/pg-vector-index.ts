import { createHash } from 'node:crypto';
import { TrellisError } from 'trellis/plugin';
import type { EmbeddingProvider } from '../embedding-provider.js';
import { splitIntoPassages } from '../passage.js';
import type {
  IndexHit,
  MetadataValue,
  RetrievalIndex,
  RetrievalMode,
  RetrievalQuery,
  TenantErasable,
} from '../retrieval-index.js';
import { checkMetadata } from './metadata-filter.js';
import { IDENTIFIER, quoteIdent, schemaStatements, searchStatement, type ChunkTable } from './pg-vector-sql.js';
import type { SqlClient } from './sql-client.js';

/** Options of {@link PgVectorIndex.open}. */
export interface PgVectorIndexOptions {
  /** A `pg` Pool or Client, or a PGlite database with the `vector` extension. */
  readonly client: SqlClient;
  /** Embeds passages when they are added and queries when they are searched. */
  readonly embeddings: EmbeddingProvider;
  /** The embeddings' length; the column is `vector(dimensions)`. */
  readonly dimensions: number;
  /** Default `public`. */
  readonly schema?: string;
  /** Default `trellis_chunks`. Each tenant's rows live in a partition of it. */
  readonly table?: string;
  /** The PostgreSQL text search configuration of the full-text column. Default `english`. */
  readonly textSearch?: string;
  /** Passage size in characters; documents are split at paragraph breaks up to it. Default 1000. */
  readonly passageChars?: number;
}

/** A document to index for one tenant. */
export interface IndexDocument {
  /** Unique within the tenant; passages are `<id>#<n>`. Adding it again replaces its passages. */
  readonly id: string;
  readonly text: string;
  /** What the model is told the passage comes from. Default: the id. */
  readonly source?: string;
  /** Flat fields to filter on: `{ product: 'billing', year: 2025 }`. */
  readonly metadata?: Readonly<Record<string, MetadataValue>>;
}

const MAX_TENANT = 200;
const MAX_K = 200;

type Row = {
  chunk_id: string;
  document_id: string;
  source: string;
  body: string;
  metadata: Record<string, MetadataValue>;
  score: number;
};

/**
 * A retrieval index in PostgreSQL with pgvector: documents split into passages with their
 * metadata, an HNSW index (cosine) over the embeddings, a `tsvector` column with a GIN index
 * for full text, and hybrid search that fuses the two rankings by reciprocal rank.
 *
 * The table is partitioned by tenant (`PARTITION BY LIST`): each tenant's passages live in a
 * partition of their own, created on its first write, with its own HNSW and GIN indexes.
 * Every statement names exactly one tenant as a parameter, so a search never returns another
 * tenant's passage; erasing a tenant drops its partition.
 *
 * @example
 * const index = await PgVectorIndex.open({ client: new pg.Pool({ connectionString }), embeddings, dimensions: 1536 });
 * await index.upsert('acme', [{ id: 'refunds.md', text, metadata: { product: 'billing' } }]);
 * const hits = await index.search({ tenant: 'acme', text: 'how long do refunds take', k: 5, mode: 'hybrid', filter: { product: 'billing' } });
 */
export class PgVectorIndex implements RetrievalIndex, TenantErasable {
  readonly name: string;
  readonly #client: SqlClient;
  readonly #embeddings: EmbeddingProvider;
  readonly #table: ChunkTable;
  readonly #passageChars: number;
  readonly #toSql: (vector: number[]) => string;
  readonly #partitions = new Map<string, Promise<void>>();

  private constructor(options: PgVectorIndexOptions, table: ChunkTable, toSql: (vector: number[]) => string) {
    this.#client = options.client;
    this.#embeddings = options.embeddings;
    this.#table = table;
    this.#passageChars = options.passageChars ?? 1000;
    this.#toSql = toSql;
    this.name = `pgvector:${table.schema}.${table.table}`;
  }

  /**
   * Checks the options, creates the extension, table and indexes when missing, and checks
   * that an existing table has the same dimensions. Without the pgvector extension on the
   * server it fails with `StoreFailed` and `details.reason` `'no-pgvector'`.
   */
  static async open(options: PgVectorIndexOptions): Promise<PgVectorIndex> {
    const table = checkOptions(options);
    const { default: pgvector } = await import('pgvector');
    const index = new PgVectorIndex(options, table, (v) => pgvector.toSql(v) as string);
    await index.#createSchema();
    return index;
  }

  /**
   * Adds documents for a tenant, or replaces them: a document's passages are written and its
   * passages from before that are no longer there are removed, in one statement.
   */
  async upsert(
    tenant: string,
    documents: readonly IndexDocument[],
    options: { readonly signal?: AbortSignal } = {},
  ): Promise<{ readonly passages: number }> {
    checkTenant(tenant);
    const rows = documents.flatMap((d, i) => {
      const where = `documents[${i}]`;
      if (typeof d?.id !== 'string' || d.id === '' || d.id.length > 512)
        throw invalid(`${where}.id must be a string of 1 to 512 characters`);
      if (typeof d.text !== 'string') throw invalid(`${where}.text must be a string`);
      const metadata = checkMetadata(d.metadata, where);
      return splitIntoPassages({ id: d.id, source: d.source ?? d.id, text: d.text }, this.#passageChars).map(
        (p, n) => ({ ...p, documentId: d.id, position: n + 1, metadata }),
      );
    });
    const ids = new Set(documents.map((d) => d.id));
    if (ids.size !== documents.length) throw invalid('two documents have the same id');
    if (documents.length === 0) return { passages: 0 };
    const vectors =
      rows.length === 0
        ? []
        : await this.#embed(
            rows.map((r) => r.text),
            options.signal,
          );
    await this.#partition(tenant);
    const t = this.#table.qualified;
    await this.#client.query(
      `WITH incoming AS (
         SELECT * FROM unnest($2::text[], $3::text[], $4::int[], $5::text[], $6::text[], $7::text[], $8::text[])
           AS x(chunk_id, document_id, position, source, body, metadata, embedding)
       ), stale AS (
         DELETE FROM ${t} WHERE tenant = $1 AND document_id = ANY($9::text[]) AND NOT (chunk_id = ANY($2::text[]))
       )
       INSERT INTO ${t} (tenant, chunk_id, document_id, position, source, body, metadata, embedding, updated_at)
       SELECT $1, chunk_id, document_id, position, source, body, metadata::jsonb, embedding::vector, now() FROM incoming
       ON CONFLICT (tenant, chunk_id) DO UPDATE SET document_id = EXCLUDED.document_id, position = EXCLUDED.position, source = EXCLUDED.source,
         body = EXCLUDED.body, metadata = EXCLUDED.metadata, embedding = EXCLUDED.embedding, updated_at = EXCLUDED.updated_at`,
      [
        tenant,
        rows.map((r) => r.id),
        rows.map((r) => r.documentId),
        rows.map((r) => r.position),
        rows.map((r) => r.source),
        rows.map((r) => r.text),
        rows.map((r) => JSON.stringify(r.metadata)),
        vectors.map((v) => this.#toSql(v)),
        [...ids],
      ],
    );
    return { passages: rows.length };
  }

  /** The best passages of one tenant for a query: `hybrid` (default), `vector` or `fulltext`. */
  async search(query: RetrievalQuery): Promise<IndexHit[]> {
    checkTenant(query?.tenant);
    if (typeof query.text !== 'string') throw invalid('search needs a query text');
    if (!Number.isInteger(query.k) || query.k < 1 || query.k > MAX_K)
      throw invalid(`k must be a whole number from 1 to ${MAX_K}`);
    const mode: RetrievalMode = query.mode ?? 'hybrid';
    if (!['hybrid', 'vector', 'fulltext'].includes(mode))
      throw invalid(`mode is hybrid, vector or fulltext, not '${String(mode)}'`);
    if (query.text.trim() === '') return [];
    const vectorText =
      mode === 'fulltext' ? undefined : this.#toSql((await this.#embed([query.text], query.signal))[0]!);
    const statement = searchStatement(
      this.#table,
      { tenant: query.tenant, text: query.text, k: query.k, mode, filter: query.filter },
      vectorText,
    );
    const { rows } = await this.#run(() => this.#client.query<Row>(statement.text, statement.params));
    return rows.map((r) => ({
      id: r.chunk_id,
      documentId: r.document_id,
      source: r.source,
      text: r.body,
      metadata: r.metadata,
      score: Number(r.score),
    }));
  }

  /** Removes documents (all their passages) of a tenant. */
  async delete(tenant: string, documentIds: readonly string[]): Promise<number> {
    checkTenant(tenant);
    const { rows } = await this.#run(() =>
      this.#client.query<{ n: string }>(
        `WITH gone AS (DELETE FROM ${this.#table.qualified} WHERE tenant = $1 AND document_id = ANY($2::text[]) RETURNING 1) SELECT count(*)::text AS n FROM gone`,
        [tenant, [...documentIds]],
      ),
    );
    return Number(rows[0]?.n ?? 0);
  }

  /** Forgets a tenant: drops its partition, so its rows and index entries leave the table's files at once (no vacuum needed). */
  async eraseTenant(tenant: string): Promise<void> {
    checkTenant(tenant);
    this.#partitions.delete(tenant);
    await this.#run(() =>
      this.#client.query(
        `DROP TABLE IF EXISTS ${quoteIdent(this.#table.schema)}.${quoteIdent(partitionName(this.#table, tenant))}`,
      ),
    );
  }

  /** The tenants with a partition, for audits and tests. */
  async tenants(): Promise<string[]> {
    const { rows } = await this.#client.query<{ tenant: string }>(
      `SELECT (regexp_match(pg_get_expr(c.relpartbound, c.oid), $1))[1] AS tenant FROM pg_inherits i JOIN pg_class c ON c.oid = i.inhrelid WHERE i.inhparent = $2::regclass ORDER BY 1`,
      ["IN \\('(.*)'\\)$", this.#table.qualified],
    );
    return rows.map((r) => r.tenant.replace(/''/g, "'"));
  }

  async #embed(texts: string[], signal?: AbortSignal): Promise<number[][]> {
    const vectors = await this.#embeddings.embed(texts, { signal });
    if (vectors.length !== texts.length)
      throw new TrellisError(
        'EmbeddingFailed',
        `${this.#embeddings.name} returned ${vectors.length} embeddings for ${texts.length} texts`,
        { kind: 'system' },
      );
    for (const v of vectors) {
      if (!Array.isArray(v) || v.length !== this.#table.dimensions || !v.every((x) => Number.isFinite(x))) {
        throw new TrellisError(
          'EmbeddingFailed',
          `${this.#embeddings.name} returned an embedding of ${Array.isArray(v) ? v.length : 0} finite numbers, but ${this.name} holds vectors of ${this.#table.dimensions}`,
          {
            kind: 'system',
            hint: 'Open the index with the dimensions of the embedding model (e.g. 1536 for text-embedding-3-small), in a new table',
          },
        );
      }
    }
    return vectors;
  }

  /** The tenant's partition, created once per process (and safely when another process races to create it). */
  #partition(tenant: string): Promise<void> {
    let made = this.#partitions.get(tenant);
    if (!made) {
      made = this.#createPartition(tenant).catch((error: unknown) => {
        this.#partitions.delete(tenant);
        throw error;
      });
      this.#partitions.set(tenant, made);
    }
    return made;
  }

  async #createPartition(tenant: string): Promise<void> {
    const { rows } = await this.#client.query<{ literal: string }>('SELECT quote_literal($1::text) AS literal', [
      tenant,
    ]);
    const name = `${quoteIdent(this.#table.schema)}.${quoteIdent(partitionName(this.#table, tenant))}`;
    try {
      await this.#client.query(
        `CREATE TABLE IF NOT EXISTS ${name} PARTITION OF ${this.#table.qualified} FOR VALUES IN (${rows[0]!.literal})`,
      );
    } catch (error) {
      // Another process created it between our IF NOT EXISTS and our CREATE.
      if (!['42P07', '23505'].includes(codeOf(error))) throw storeError(error, this.name);
    }
  }

  async #createSchema(): Promise<void> {
    for (const statement of schemaStatements(this.#table)) {
      try {
        await this.#client.query(statement);
      } catch (error) {
        if (['42P07', '23505'].includes(codeOf(error))) continue;
        throw storeError(error, this.name);
      }
    }
    const { rows } = await this.#client.query<{ type: string }>(
      `SELECT format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = $1::regclass AND attname = 'embedding'`,
      [this.#table.qualified],
    );
    const want = `vector(${this.#table.dimensions})`;
    if (rows[0]?.type !== want) {
      throw new TrellisError(
        'InvalidConfig',
        `${this.name} holds ${rows[0]?.type ?? 'no embedding column'}, but the index was opened with dimensions ${this.#table.dimensions}`,
        {
          hint: 'Open it with the dimensions its table was created with, or use another table for the other embedding model',
        },
      );
    }
  }

  async #run<T>(statement: () => Promise<T>): Promise<T> {
    try {
      return await statement();
    } catch (error) {
      throw storeError(error, this.name);
    }
  }
}

function checkOptions(options: PgVectorIndexOptions): ChunkTable {
  const problems: string[] = [];
  if (typeof options?.client?.query !== 'function')
    problems.push('client must be a pg Pool or Client, or a PGlite database');
  if (typeof options?.embeddings?.embed !== 'function') problems.push('embeddings must be an EmbeddingProvider');
  if (!Number.isInteger(options?.dimensions) || options.dimensions < 1 || options.dimensions > 16000)
    problems.push('dimensions must be a whole number from 1 to 16000');
  const schema = options?.schema ?? 'public';
  const table = options?.table ?? 'trellis_chunks';
  const textSearch = options?.textSearch ?? 'english';
  if (!IDENTIFIER.test(schema))
    problems.push(`schema '${schema}' must be lower case letters, digits and _ (at most 48)`);
  if (!IDENTIFIER.test(table)) problems.push(`table '${table}' must be lower case letters, digits and _ (at most 48)`);
  if (!IDENTIFIER.test(textSearch))
    problems.push(`textSearch '${textSearch}' must name a text search configuration, e.g. english or simple`);
  if (options?.passageChars !== undefined && !(Number.isInteger(options.passageChars) && options.passageChars >= 50))
    problems.push('passageChars must be a whole number of at least 50');
  if (problems.length > 0)
    throw new TrellisError('InvalidConfig', `PgVectorIndex options are invalid:\n- ${problems.join('\n- ')}`, {
      hint: "e.g. PgVectorIndex.open({ client: pool, embeddings, dimensions: 1536, table: 'knowledge_chunks' })",
    });
  return {
    schema,
    table,
    textSearch,
    dimensions: options.dimensions,
    qualified: `${quoteIdent(schema)}.${quoteIdent(table)}`,
  };
}

/** A tenant's partition: named by a hash of the tenant, so any tenant string makes a safe, fixed-length name. */
function partitionName(table: ChunkTable, tenant: string): string {
  return `${table.table}_t_${createHash('sha256').update(tenant).digest('hex').slice(0, 16)}`;
}

function checkTenant(tenant: unknown): asserts tenant is string {
  if (typeof tenant !== 'string' || tenant === '' || tenant.length > MAX_TENANT || tenant.includes('\u0000')) {
    throw new TrellisError(
      'InvalidOptions',
      `A tenant is a non-empty string of at most ${MAX_TENANT} characters, got ${tenant === undefined ? 'none' : JSON.stringify(tenant)}`,
      {
        hint: 'Every read and write of the index names its tenant (for one tenant, use a constant such as "default")',
      },
    );
  }
}

function invalid(message: string): TrellisError {
  return new TrellisError('InvalidOptions', message, {
    hint: "e.g. index.search({ tenant: 'acme', text: 'refund window', k: 5, mode: 'hybrid' })",
  });
}

function codeOf(error: unknown): string {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' ? code : '';
}

function storeError(error: unknown, name: string): TrellisError {
  if (TrellisError.is(error)) return error;
  const message = error instanceof Error ? error.message : String(error);
  if (
    /extension "vector" is not available|could not open extension control file|type "vector" does not exist/i.test(
      message,
    )
  ) {
    return new TrellisError('StoreFailed', `${name}: the PostgreSQL server has no pgvector extension (${message})`, {
      hint: 'Install it on the server (Debian: postgresql-<version>-pgvector; or the pgvector/pgvector Docker image), or use PGlite with its vector extension',
      details: { reason: 'no-pgvector' },
      cause: error,
    });
  }
  return new TrellisError('StoreFailed', `${name}: ${message}`, {
    details: { code: codeOf(error) },
    cause: error,
    hint: 'Check the PostgreSQL server and the index options',
  });
}
