import { PGlite } from '@electric-sql/pglite';
import { vector } from '@electric-sql/pglite/vector';
import pg from 'pg';
import { POSTGRES_URL, haveService } from '../../support/services.js';
import { describePgVectorIndex } from '../../support/retrieval-index-contract.js';
import { MemoryStore, ScriptedModel, Trellis, TrellisError } from '../../../index.js';
import { RagPlugin, RETRIEVAL_INDEX } from '../../../plugins/retrieval/index.js';
import { PgVectorIndex } from '../../../plugins/retrieval/index.js';
import { searchStatement } from '../../../plugins/retrieval/pgvector/pg-vector-sql.js';
import { ConceptEmbeddings } from '../../support/concept-embeddings.js';
import { ACME_DOCS, GLOBEX_DOCS, GLOBEX_MARKER } from '../../support/retrieval-index-contract.js';

// PGlite: PostgreSQL 17 in WebAssembly with its bundled pgvector, in this process.
let lite: PGlite;
beforeAll(async () => {
  lite = await PGlite.create({ extensions: { vector } });
}, 120_000);
afterAll(() => lite?.close());
describePgVectorIndex(
  'PGlite (pgvector bundled)',
  () => lite,
  () => 'kb',
);

describe('PgVectorIndex query plans (PGlite)', () => {
  it("a vector search is served by the HNSW index of the tenant's partition alone", async () => {
    const embeddings = new ConceptEmbeddings();
    await PgVectorIndex.open({
      client: lite,
      embeddings,
      dimensions: embeddings.dimensions,
      schema: 'plans',
      table: 'chunks',
    }).then((i) => Promise.all([i.upsert('acme', ACME_DOCS), i.upsert('globex', GLOBEX_DOCS)]));
    const table = {
      schema: 'plans',
      table: 'chunks',
      qualified: '"plans"."chunks"',
      dimensions: 6,
      textSearch: 'english',
    };
    const statement = searchStatement(
      table,
      { tenant: 'acme', text: 'refund', k: 3, mode: 'vector' },
      '[1,0,0,0,0,0.05]',
    );
    // A handful of rows: left to itself the planner reads them and sorts. Sorting made dear, it
    // must find an ordered path, which only the HNSW index gives (ORDER BY score DESC would not).
    await lite.exec('SET enable_seqscan = off; SET enable_sort = off');
    try {
      const plan = (await lite.query<{ 'QUERY PLAN': string }>(`EXPLAIN ${statement.text}`, statement.params)).rows
        .map((r) => r['QUERY PLAN'])
        .join('\n');
      expect(plan).toMatch(
        /Index Scan using chunks_t_[0-9a-f]{16}_embedding_idx|Index Scan using \S*embedding\S* on chunks_t_[0-9a-f]{16}/,
      );
      // Only one partition is scanned: the tenant's.
      expect(plan.match(/on chunks_t_[0-9a-f]{16}/g)).toHaveLength(1);
    } finally {
      await lite.exec('RESET enable_seqscan; RESET enable_sort');
    }
  });
});

describe("RagPlugin over a PgVectorIndex: passages of the session's tenant only", () => {
  let index: PgVectorIndex;
  beforeAll(async () => {
    const embeddings = new ConceptEmbeddings();
    index = await PgVectorIndex.open({
      client: lite,
      embeddings,
      dimensions: embeddings.dimensions,
      schema: 'rag',
      table: 'chunks',
    });
    await index.upsert('acme', ACME_DOCS);
    await index.upsert('globex', GLOBEX_DOCS);
  });

  async function deskApp() {
    const app = Trellis.create({
      store: new MemoryStore(),
      providers: [{ provide: RETRIEVAL_INDEX, useValue: index }],
    });
    await app.install(RagPlugin, { config: { search: 'index', topK: 3, filter: { lang: 'en' } } });
    const seen: string[] = [];
    const model = new ScriptedModel((request) => {
      seen.push(
        request.messages
          .filter((m) => m.role === 'system')
          .map((m) => m.content)
          .join('\n'),
      );
      return 'ok';
    });
    return { app, seen, agent: app.agent({ name: 'kb', instructions: 'Answer from the passages.', model }) };
  }

  it("injects the tenant's passages (hybrid, filtered) and never another tenant's", async () => {
    const { app, seen, agent } = await deskApp();
    await agent
      .session('a1', { context: { 'app.tenant': 'acme' } })
      .send('How do I get a refund, and where is parcel ZX-9000?');
    expect(seen[0]).toContain('[1] ');
    expect(seen[0]).toContain('refunds.md');
    expect(seen[0]).toContain('shipping.md');
    expect(seen[0]).not.toContain('konto.md');
    expect(seen[0]).not.toContain(GLOBEX_MARKER);
    await agent.session('g1', { context: { 'app.tenant': 'globex' } }).send('How do I get a refund?');
    expect(seen[1]).toContain(GLOBEX_MARKER);
    await app.stop();
  });

  it('a session without app.tenant fails its turn with MissingContext, naming the key', async () => {
    const { app, agent } = await deskApp();
    const result = await agent.session('none').send('refund?');
    expect(result.status).toBe('failed');
    expect(result.error?.code).toBe('MissingContext');
    expect(result.error?.message).toContain("'app.tenant'");
    await app.stop();
  });

  it('app.erase({ tenant }) erases the tenant from the index (its partition dropped)', async () => {
    const { app, agent } = await deskApp();
    await index.upsert('umbrella', [{ id: 'u.md', text: 'Umbrella refunds are final.', metadata: { lang: 'en' } }]);
    await agent.session('u1', { context: { 'app.tenant': 'umbrella' } }).send('refund?');
    const report = await app.erase({ tenant: 'umbrella' });
    expect(report.plugins).toContain('rag');
    expect(await index.tenants()).not.toContain('umbrella');
    expect(await index.search({ tenant: 'umbrella', text: 'refund', k: 3 })).toEqual([]);
    expect((await index.search({ tenant: 'acme', text: 'refund', k: 3 })).length).toBeGreaterThan(0);
    await app.stop();
  });

  it("refuses search: 'index' without a bound index, or with local documents", async () => {
    const bare = Trellis.create();
    await expect(bare.install(RagPlugin, { config: { search: 'index' } })).rejects.toThrow(
      /search: 'index' needs a retrieval index/,
    );
    const bound = Trellis.create({ providers: [{ provide: RETRIEVAL_INDEX, useValue: index }] });
    const error = await bound
      .install(RagPlugin, { config: { search: 'index', documents: [{ id: 'a', text: 'b' }] } })
      .catch((e: unknown) => e);
    expect(TrellisError.is(error, 'InvalidConfig')).toBe(true);
  });
});

// The real server, when it has the pgvector extension (Debian's PostgreSQL 15 here has none:
// that is a skip with one line, never a failure, even with TRELLIS_REQUIRE_SERVICES=1).
const schema = `trellis_pgv_${process.pid}_${Date.now().toString(36)}`;
let pool: pg.Pool | undefined;
const serverReady = (async () => {
  if (!(await haveService('postgres', 'PgVectorIndex on the PostgreSQL server'))) return false;
  const probe = new pg.Pool({ connectionString: POSTGRES_URL, max: 1 });
  try {
    const { rows } = await probe.query("SELECT 1 FROM pg_available_extensions WHERE name = 'vector'");
    if (rows.length === 0)
      process.stdout.write(
        `skipped: PgVectorIndex on the PostgreSQL server (${POSTGRES_URL} has no pgvector extension; the same tests ran on PGlite)\n`,
      );
    return rows.length > 0;
  } finally {
    await probe.end();
  }
})();
const server = await serverReady;
if (server) {
  beforeAll(() => {
    pool = new pg.Pool({ connectionString: POSTGRES_URL, max: 4 });
  });
  afterAll(async () => {
    await pool!.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
    await pool!.end();
  });
  describePgVectorIndex(
    'the PostgreSQL server',
    () => pool!,
    () => schema,
  );
}
