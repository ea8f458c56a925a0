import { TrellisError } from '../../index.js';
import {
  PgVectorIndex,
  type IndexDocument,
  type MetadataFilter,
  type SqlClient,
} from '../../plugins/retrieval/index.js';
import { ConceptEmbeddings } from './concept-embeddings.js';

/** Acme's documents; Globex has documents of the same ids, each holding its marker. */
export const ACME_DOCS: IndexDocument[] = [
  {
    id: 'refunds.md',
    text: 'Refunds: we send the money back within five working days.',
    metadata: { product: 'billing', lang: 'en' },
  },
  {
    id: 'travel.md',
    text: 'Reimbursement of travel costs follows policy FIN-7.',
    metadata: { product: 'hr', lang: 'en' },
  },
  {
    id: 'shipping.md',
    text: 'Parcels ship with our delivery partner. Tracking code ZX-9000 follows each parcel.',
    metadata: { product: 'logistics', lang: 'en' },
  },
  {
    id: 'konto.md',
    text: 'Passwort vergessen? Login über die Kontoseite.',
    source: 'Konto (de)',
    metadata: { product: 'accounts', lang: 'de' },
  },
];
export const GLOBEX_MARKER = 'GLOBEX-CONFIDENTIAL';
export const GLOBEX_DOCS: IndexDocument[] = ACME_DOCS.map((d) => ({
  ...d,
  text: `${d.text} ${GLOBEX_MARKER} refunds parcel ZX-9000 FIN-7`,
}));

/**
 * What every PostgreSQL the pgvector index runs on must do: the schema with its HNSW and GIN
 * indexes and per-tenant partitions, the three search modes, metadata filters, replacing and
 * deleting documents, erasing a tenant — and never a passage of another tenant.
 * `client()` answers a client on an empty schema or database.
 */
export function describePgVectorIndex(label: string, client: () => SqlClient, schema: () => string): void {
  describe(`PgVectorIndex on ${label}`, () => {
    let index: PgVectorIndex;
    const embeddings = new ConceptEmbeddings();
    beforeAll(async () => {
      index = await PgVectorIndex.open({
        client: client(),
        embeddings,
        dimensions: embeddings.dimensions,
        schema: schema(),
        table: 'kb_chunks',
        passageChars: 200,
      });
      await index.upsert('acme', ACME_DOCS);
      await index.upsert('globex', GLOBEX_DOCS);
    });

    it('creates a table partitioned by tenant, with an HNSW index on the embeddings and GIN indexes on full text and metadata', async () => {
      const { rows } = await client().query<{ indexdef: string }>(
        'SELECT indexdef FROM pg_indexes WHERE schemaname = $1 AND tablename = $2',
        [schema(), 'kb_chunks'],
      );
      const defs = rows.map((r) => r.indexdef).join('\n');
      expect(defs).toMatch(/USING hnsw \(embedding vector_cosine_ops\)/);
      expect(defs).toMatch(/USING gin \(tsv\)/);
      expect(defs).toMatch(/USING gin \(metadata jsonb_path_ops\)/);
      expect(await index.tenants()).toEqual(['acme', 'globex']);
      // Each partition carries its own HNSW index.
      const parts = await client().query<{ n: string }>(
        `SELECT count(*)::text AS n FROM pg_indexes WHERE schemaname = $1 AND tablename LIKE 'kb_chunks_t_%' AND indexdef LIKE '%hnsw%'`,
        [schema()],
      );
      expect(Number(parts.rows[0]!.n)).toBe(2);
    });

    it('vector search finds synonyms full text cannot; full text finds codes the embeddings ignore; hybrid finds both', async () => {
      const ids = async (mode: 'vector' | 'fulltext' | 'hybrid', text: string, k = 2) =>
        (await index.search({ tenant: 'acme', text, k, mode })).map((h) => h.documentId);
      expect(await ids('vector', 'how do I get a refund')).toEqual(expect.arrayContaining(['refunds.md', 'travel.md']));
      expect(await ids('fulltext', 'how do I get a refund')).toEqual(['refunds.md']);
      expect(await ids('fulltext', 'ZX-9000')).toEqual(['shipping.md']);
      const hybrid = await index.search({ tenant: 'acme', text: 'refund under FIN-7', k: 3, mode: 'hybrid' });
      // travel.md is ranked by both (a synonym of refund, and the code FIN-7): first.
      expect(hybrid[0]!.documentId).toBe('travel.md');
      expect(hybrid.map((h) => h.documentId)).toContain('refunds.md');
      expect(hybrid[0]!.score).toBeCloseTo(1 / 61 + 1 / 61, 6);
      expect(hybrid[0]).toMatchObject({
        id: 'travel.md#1',
        source: 'travel.md',
        metadata: { product: 'hr', lang: 'en' },
      });
    });

    it('filters on metadata: a value, a list of values, and no match', async () => {
      const byFilter = async (filter: Record<string, string | string[]>) =>
        (await index.search({ tenant: 'acme', text: 'refund parcel password', k: 10, mode: 'vector', filter }))
          .map((h) => h.documentId)
          .sort();
      expect(await byFilter({ product: 'billing' })).toEqual(['refunds.md']);
      expect(await byFilter({ product: ['billing', 'logistics'] })).toEqual(['refunds.md', 'shipping.md']);
      expect(await byFilter({ lang: 'de' })).toEqual(['konto.md']);
      expect(await byFilter({ lang: 'fr' })).toEqual([]);
      expect(await byFilter({ lang: 'en', product: 'hr' })).toEqual(['travel.md']);
      await expect(
        index.search({ tenant: 'acme', text: 'x', k: 3, filter: { nested: { a: 1 } as never } }),
      ).rejects.toThrow(/must be a string, a finite number or a boolean/);
      await expect(index.search({ tenant: 'acme', text: 'x', k: 3, filter: { lang: [] } })).rejects.toThrow(
        /lists no value/,
      );
    });

    it("never returns another tenant's passage, in any mode, with any filter, whatever the tenant string", async () => {
      const queries = [
        'refund',
        'ZX-9000',
        'FIN-7 refunds parcel',
        GLOBEX_MARKER,
        'password login',
        `' OR '1'='1`,
        'globex',
      ];
      for (const mode of ['vector', 'fulltext', 'hybrid'] as const) {
        for (const text of queries) {
          for (const filter of [undefined, { lang: 'en' }, { product: ['billing', 'hr', 'logistics', 'accounts'] }] as (
            MetadataFilter | undefined
          )[]) {
            const hits = await index.search({ tenant: 'acme', text, k: 20, mode, ...(filter ? { filter } : {}) });
            expect(hits.filter((h) => h.text.includes(GLOBEX_MARKER))).toEqual([]);
            const theirs = await index.search({ tenant: 'globex', text, k: 20, mode, ...(filter ? { filter } : {}) });
            expect(theirs.every((h) => h.text.includes(GLOBEX_MARKER))).toBe(true);
          }
        }
      }
      // A tenant that looks like SQL is data: its own empty partition, nobody's passages.
      expect(await index.search({ tenant: "acme' OR tenant <> '", text: 'refund', k: 20, mode: 'hybrid' })).toEqual([]);
      await index.upsert("x'); DROP TABLE kb_chunks; --", [{ id: 'a', text: 'refund' }]);
      expect(
        (await index.search({ tenant: "x'); DROP TABLE kb_chunks; --", text: 'refund', k: 5, mode: 'vector' })).map(
          (h) => h.text,
        ),
      ).toEqual(['refund']);
      expect((await index.search({ tenant: 'acme', text: 'refund', k: 5, mode: 'vector' })).length).toBeGreaterThan(0);
      await index.eraseTenant("x'); DROP TABLE kb_chunks; --");
    });

    it('refuses a search or write without a tenant, and bad queries, with a clear error', async () => {
      const refused = async (work: () => Promise<unknown>) => {
        const error = await work().then(
          () => undefined,
          (e: unknown) => e,
        );
        expect(TrellisError.is(error, 'InvalidOptions')).toBe(true);
        return (error as Error).message;
      };
      expect(await refused(() => index.search({ tenant: '', text: 'refund', k: 3 }))).toContain(
        'A tenant is a non-empty string',
      );
      expect(await refused(() => index.search({ text: 'refund', k: 3 } as never))).toContain('got none');
      expect(await refused(() => index.upsert(undefined as never, ACME_DOCS))).toContain('A tenant');
      expect(await refused(() => index.search({ tenant: 'acme', text: 'x', k: 0 }))).toContain('k must be');
      expect(await refused(() => index.search({ tenant: 'acme', text: 'x', k: 3, mode: 'magic' as never }))).toContain(
        'mode is hybrid, vector or fulltext',
      );
      expect(
        await refused(() => index.upsert('acme', [{ id: 'a', text: 'x', metadata: { deep: { no: 1 } } as never }])),
      ).toContain("metadata field 'deep'");
    });

    it("replacing a document removes its passages that are gone; delete removes a document; other tenants' copies stay", async () => {
      const long = ['Refund step one.', 'Refund step two.', 'Refund step three.']
        .map((p) => p.padEnd(150, '.'))
        .join('\n\n');
      await index.upsert('acme', [{ id: 'steps.md', text: long }]);
      await index.upsert('globex', [{ id: 'steps.md', text: long }]);
      const steps = async (tenant: string) =>
        (await index.search({ tenant, text: 'refund step', k: 50, mode: 'fulltext' }))
          .filter((h) => h.documentId === 'steps.md')
          .map((h) => h.id)
          .sort();
      expect(await steps('acme')).toEqual(['steps.md#1', 'steps.md#2', 'steps.md#3']);
      await index.upsert('acme', [{ id: 'steps.md', text: 'Refund step one, all in one.' }]);
      expect(await steps('acme')).toEqual(['steps.md#1']);
      expect(await index.delete('acme', ['steps.md'])).toBe(1);
      expect(await steps('acme')).toEqual([]);
      expect(await steps('globex')).toHaveLength(3);
      await index.delete('globex', ['steps.md']);
    });

    it("erasing a tenant drops its partition: its passages are gone, the other tenant's untouched", async () => {
      await index.upsert('initech', [{ id: 'a.md', text: 'Initech refunds take ten days.' }]);
      expect(await index.search({ tenant: 'initech', text: 'refund', k: 3 })).toHaveLength(1);
      await index.eraseTenant('initech');
      expect(await index.tenants()).not.toContain('initech');
      expect(await index.search({ tenant: 'initech', text: 'refund', k: 3 })).toEqual([]);
      const { rows } = await client().query<{ n: string }>(
        `SELECT count(*)::text AS n FROM "${schema()}".kb_chunks WHERE body LIKE '%Initech%'`,
      );
      expect(rows[0]!.n).toBe('0');
      expect((await index.search({ tenant: 'acme', text: 'refund', k: 3 })).length).toBeGreaterThan(0);
    });

    it('refuses to open an existing table with other dimensions, and bad options', async () => {
      await expect(
        PgVectorIndex.open({ client: client(), embeddings, dimensions: 7, schema: schema(), table: 'kb_chunks' }),
      ).rejects.toThrow(/holds vector\(6\), but the index was opened with dimensions 7/);
      await expect(
        PgVectorIndex.open({ client: client(), embeddings, dimensions: 0, schema: 'Bad-Schema', table: 'x; drop' }),
      ).rejects.toThrow(/dimensions must be[\s\S]*schema 'Bad-Schema'[\s\S]*table 'x; drop'/);
    });
  });
}
