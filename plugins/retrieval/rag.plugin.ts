import {
  inject,
  optional,
  Hook,
  Plugin,
  type HookContext,
  TrellisError,
  type ChatMessage,
  type PluginLifecycle,
  PLUGIN_CONFIG,
} from 'trellis/plugin';
import { loadDocuments } from './document-loader.js';
import { EMBEDDING_PROVIDER, type EmbeddingProvider } from './embedding-provider.js';
import { FullTextIndex, fingerprintOf } from './full-text-index.js';
import { readVectors, writeVectors } from './persisted-vectors.js';
import { splitIntoPassages, type Passage, type PassageHit, type SourceDocument } from './passage.js';
import { RagConfig } from './rag.config.js';
import { VectorIndex } from './vector-index.js';

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
 * Before each model call its `memory.read` hook (plugin priority, default 100) searches
 * with the turn's message and adds one system message with the top `topK` passages and
 * their sources; nothing is added when nothing matches.
 */
@Plugin({ name: 'rag', version: '1.0.0', description: 'Injects the passages of local documents that match the message', config: RagConfig })
export class RagPlugin implements PluginLifecycle {
  private passages: readonly Passage[] = [];
  private fullText: FullTextIndex | undefined;
  private vectors: VectorIndex | undefined;
  private readonly queryVectors = new Map<string, number[]>();

  constructor(
    @inject(PLUGIN_CONFIG) private readonly config: RagConfig,
    @inject(EMBEDDING_PROVIDER) @optional() private readonly embeddings?: EmbeddingProvider,
  ) {}

  /** Reads, splits and indexes the documents; a failure aborts the install. */
  async onInstall(): Promise<void> {
    const { config } = this;
    if (config.search === 'vector' && !this.embeddings) {
      throw new TrellisError('InvalidConfig', "search: 'vector' needs an embedding provider", {
        hint: 'Bind one: Trellis.create({ providers: [{ provide: EMBEDDING_PROVIDER, useValue: new OpenAIEmbeddings({ … }) }] })',
      });
    }
    const documents: SourceDocument[] = config.documentsDir ? await loadDocuments(config.documentsDir, config.extensions) : [];
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

  /**
   * Erasure: the cache of query embeddings is keyed by the users' messages, and is not kept by
   * session, so any erasure empties it (it only costs new embeddings). The indexed documents
   * are the app's, not users' data.
   */
  onErase(): void {
    this.queryVectors.clear();
  }

  /** How many passages are indexed. */
  get size(): number {
    return this.passages.length;
  }

  /** The best passages for a query, best first, at most `k` (default `topK`), none below `minScore`. */
  async search(query: string, k = this.config.topK, signal?: AbortSignal): Promise<PassageHit[]> {
    const hits = this.vectors ? this.vectors.query(await this.embedQuery(query, signal), k) : (this.fullText?.query(query, k) ?? []);
    return hits.filter((h) => h.score >= this.config.minScore);
  }

  @Hook('memory.read')
  async recall(payload: { readonly input: string }, ctx: HookContext): Promise<ChatMessage[]> {
    const hits = await this.search(payload.input, this.config.topK, ctx.signal);
    return hits.length === 0 ? [] : [passagesMessage(hits)];
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
      throw new TrellisError('EmbeddingFailed', `${embeddings.name} returned ${vectors.length} embeddings for ${this.passages.length} passages`, { kind: 'system' });
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
