import {
  inject,
  optional,
  Hook,
  Plugin,
  Requires,
  type HookContext,
  TrellisError,
  type ChatMessage,
  type EraseRequest,
  type PluginLifecycle,
  PLUGIN_CONFIG,
} from 'trellis/plugin';
import { loadDocuments } from './document-loader.js';
import { EMBEDDING_PROVIDER, type EmbeddingProvider } from './embedding-provider.js';
import { FullTextIndex, fingerprintOf } from './full-text-index.js';
import { readVectors, writeVectors } from './persisted-vectors.js';
import { splitIntoPassages, type Passage, type PassageHit, type SourceDocument } from './passage.js';
import { RagConfig } from './rag.config.js';
import { isTenantErasable, RETRIEVAL_INDEX, type RetrievalIndex } from './retrieval-index.js';
import { VectorIndex } from './vector-index.js';

/** The host's context key naming the tenant whose passages an index search may return. */
export const RAG_TENANT_KEY = 'app.tenant';

/** Query embeddings kept, so the rounds of one turn embed its message once. */
const QUERY_CACHE = 64;

/**
 * Retrieval-augmented generation over local documents. At install it reads the documents
 * (a folder and/or inline ones), splits them into passages and indexes them: a minisearch
 * full-text index, or, with `search: 'vector'`, an in-memory vector index over the bound
 * {@link EMBEDDING_PROVIDER}, searched by cosine similarity. With `indexPath`, the index
 * (or the passage embeddings) is persisted there as JSON and reused while the documents,
 * and for vectors the embedding provider, are unchanged.
 *
 * With `search: 'index'` it keeps no documents of its own: it searches the bound
 * {@link RETRIEVAL_INDEX} (e.g. a `PgVectorIndex`) for the session's tenant, the host's
 * `app.tenant` context key — required then, so a session without a tenant fails rather than
 * searching anyone's passages. `app.erase({ tenant })` erases the tenant from an index that
 * can (`eraseTenant`).
 *
 * Before each model call its `memory.read` hook (plugin priority, default 100) searches
 * with the turn's message and adds one system message with the top `topK` passages and
 * their sources; nothing is added when nothing matches.
 */
@Plugin({
  name: 'rag',
  version: '1.0.0',
  description: 'Injects the passages of local documents that match the message',
  config: RagConfig,
})
export class RagPlugin implements PluginLifecycle {
  private passages: readonly Passage[] = [];
  private fullText: FullTextIndex | undefined;
  private vectors: VectorIndex | undefined;
  private readonly queryVectors = new Map<string, number[]>();

  constructor(
    @inject(PLUGIN_CONFIG) private readonly config: RagConfig,
    @inject(EMBEDDING_PROVIDER) @optional() private readonly embeddings?: EmbeddingProvider,
    @inject(RETRIEVAL_INDEX) @optional() private readonly index?: RetrievalIndex,
  ) {}

  /** Reads, splits and indexes the documents; a failure aborts the install. */
  async onInstall(): Promise<void> {
    const { config } = this;
    if (config.search === 'index') {
      if (!this.index) {
        throw new TrellisError('InvalidConfig', "search: 'index' needs a retrieval index", {
          hint: 'Bind one: Trellis.create({ providers: [{ provide: RETRIEVAL_INDEX, useValue: await PgVectorIndex.open({ … }) }] })',
        });
      }
      if (config.documentsDir !== undefined || config.documents !== undefined) {
        throw new TrellisError(
          'InvalidConfig',
          "search: 'index' takes no documents: they are added to the index per tenant",
          {
            hint: "Add them with index.upsert(tenant, documents), or use search: 'fulltext' or 'vector' for local documents",
          },
        );
      }
      return;
    }
    if (config.search === 'vector' && !this.embeddings) {
      throw new TrellisError('InvalidConfig', "search: 'vector' needs an embedding provider", {
        hint: 'Bind one: Trellis.create({ providers: [{ provide: EMBEDDING_PROVIDER, useValue: new OpenAIEmbeddings({ … }) }] })',
      });
    }
    const documents: SourceDocument[] = config.documentsDir
      ? await loadDocuments(config.documentsDir, config.extensions)
      : [];
    for (const d of config.documents ?? []) documents.push({ id: d.id, source: d.source ?? d.id, text: d.text });
    this.passages = documents.flatMap((d) => splitIntoPassages(d, config.passageChars));
    if (config.search === 'vector') {
      const vectors = await this.passageVectors();
      const index = new VectorIndex();
      this.passages.forEach((p, i) => index.add(p, vectors[i]!));
      this.vectors = index;
    } else {
      this.fullText = await FullTextIndex.open(this.passages, config.indexPath);
    }
  }

  /** How many passages are indexed. */
  get size(): number {
    return this.passages.length;
  }

  /** The best passages for a query, best first, at most `k` (default `topK`), none below `minScore`. */
  async search(query: string, k = this.config.topK, signal?: AbortSignal): Promise<PassageHit[]> {
    const hits = this.vectors
      ? this.vectors.query(await this.embedQuery(query, signal), k)
      : (this.fullText?.query(query, k) ?? []);
    return hits.filter((h) => h.score >= this.config.minScore);
  }

  /** The best passages of one tenant's, from the bound index (`search: 'index'`). */
  async searchTenant(tenant: string, query: string, k = this.config.topK, signal?: AbortSignal): Promise<PassageHit[]> {
    const { indexMode, filter, minScore } = this.config;
    const hits = await this.index!.search({
      tenant,
      text: query,
      k,
      mode: indexMode,
      ...(filter ? { filter } : {}),
      ...(signal ? { signal } : {}),
    });
    return hits.filter((h) => h.score >= minScore);
  }

  @Hook('memory.read')
  @Requires({ key: RAG_TENANT_KEY, optional: true })
  async recall(payload: { readonly input: string }, ctx: HookContext): Promise<ChatMessage[]> {
    let hits: PassageHit[];
    if (this.config.search === 'index') {
      const tenant = ctx.get<unknown>(RAG_TENANT_KEY);
      if (typeof tenant !== 'string' || tenant === '') {
        throw new TrellisError(
          'MissingContext',
          `rag searches ${this.index!.name} per tenant, and this session has no '${RAG_TENANT_KEY}'`,
          {
            hint: `Open the session with the tenant: agent.session(id, { context: { '${RAG_TENANT_KEY}': 'acme' } })`,
          },
        );
      }
      hits = await this.searchTenant(tenant, payload.input, this.config.topK, ctx.signal);
    } else {
      hits = await this.search(payload.input, this.config.topK, ctx.signal);
    }
    return hits.length === 0 ? [] : [passagesMessage(hits)];
  }

  /**
   * Erasure: the cache of query embeddings is keyed by the users' messages, and is not kept by
   * session, so any erasure empties it (it only costs new embeddings). With `search: 'index'`,
   * erasing a tenant drops its passages from the index.
   */
  async onErase(request: EraseRequest): Promise<void> {
    this.queryVectors.clear();
    const tenant = request.selector.tenant;
    if (this.config.search === 'index' && tenant !== undefined && this.index && isTenantErasable(this.index))
      await this.index.eraseTenant(tenant);
  }

  /** Embeds the passages, or reads their embeddings from `indexPath` when they are unchanged. */
  private async passageVectors(): Promise<number[][]> {
    const embeddings = this.embeddings!;
    const path = this.config.indexPath;
    const fingerprint = fingerprintOf(this.passages);
    const saved = path ? await readVectors(path, fingerprint, embeddings.name) : undefined;
    if (saved && saved.length === this.passages.length) return saved;
    const vectors = await embeddings.embed(this.passages.map((p) => p.text));
    if (vectors.length !== this.passages.length) {
      throw new TrellisError(
        'EmbeddingFailed',
        `${embeddings.name} returned ${vectors.length} embeddings for ${this.passages.length} passages`,
        { kind: 'system' },
      );
    }
    if (path) await writeVectors(path, fingerprint, embeddings.name, vectors);
    return vectors;
  }

  private async embedQuery(query: string, signal?: AbortSignal): Promise<number[]> {
    let vector = this.queryVectors.get(query);
    if (!vector) {
      [vector] = await this.embeddings!.embed([query], { signal });
      if (this.queryVectors.size >= QUERY_CACHE) this.queryVectors.delete(this.queryVectors.keys().next().value!);
      this.queryVectors.set(query, vector!);
    }
    return vector!;
  }
}

/** The system message the passages are injected as, each numbered with its source. */
export function passagesMessage(hits: readonly PassageHit[]): ChatMessage {
  const body = hits.map((h, i) => `[${i + 1}] ${h.source} (${h.id})\n${h.text}`).join('\n\n');
  return {
    role: 'system',
    content: `Passages from the knowledge base that may help answer the user. Cite a passage by its source when you use it; say so when they do not contain the answer.\n\n${body}`,
  };
}
