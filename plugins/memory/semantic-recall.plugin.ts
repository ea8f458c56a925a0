import { createHash } from 'node:crypto';
import {
  Hook,
  inject,
  KERNEL_KEYS,
  optional,
  Plugin,
  PLUGIN_CONFIG,
  Requires,
  TrellisError,
  type ChatMessage,
  type EraseRequest,
  type HookContext,
  type PluginHost,
  type PluginLifecycle,
  type PluginRecords,
  type ToolCallOutcome,
  type TurnExchange,
} from 'trellis/plugin';
import { EMBEDDING_PROVIDER, type EmbeddingProvider } from '../retrieval/embedding-provider.js';
import { cosineSimilarity } from '../retrieval/vector-index.js';
import { SemanticRecallConfig } from './semantic-recall.config.js';
import { estimateTextTokens } from './token-estimate.js';
import { MEMORY_USER_KEY, memoryUser } from './user-key.js';

/** One remembered exchange, as it is kept in the store (a record per exchange, under the user). */
export interface RecalledExchange {
  readonly sessionId: string;
  readonly turn: number;
  /** ISO time it was remembered. */
  readonly at: string;
  readonly input: string;
  readonly reply: string;
  readonly vector: readonly number[];
}

/** An exchange found for a message, with its similarity. */
export interface RecallHit {
  readonly exchange: Omit<RecalledExchange, 'vector'>;
  readonly score: number;
}

/** Recall messages kept per turn, so the rounds of one turn search once. */
const CACHE = 64;

/**
 * Semantic recall: what a user said in earlier sessions, when it bears on this message.
 *
 * - `memory.write`: each completed exchange of a session whose host context names the user
 *   (`app.user_id`) is embedded (the bound {@link EMBEDDING_PROVIDER}) and kept as a record
 *   of this plugin in the session store, under that user; past `maxEntries` the oldest go.
 * - `memory.read`: the turn's message is embedded and compared with the user's exchanges
 *   from *other* sessions (this session's are in the transcript already); the best `topK`
 *   scoring at least `minScore` are added, best first, as one system message that fits in
 *   `maxTokens` (an exchange that would overflow it is left out).
 *
 * The user comes from the host's context only, never from the model, so no user's turn reads
 * another's exchanges; a session without `app.user_id` is neither remembered nor given
 * recall. An embedding failure is reported (`error` event) and the turn goes on without
 * recall. `app.erase({ userId })` deletes the user's exchanges; erasing sessions deletes
 * theirs.
 */
@Plugin({
  name: 'memory.recall',
  version: '1.0.0',
  description: "Recalls the relevant exchanges of a user's earlier sessions",
  config: SemanticRecallConfig,
})
export class SemanticRecall implements PluginLifecycle {
  private records: PluginRecords | undefined;
  private host: PluginHost | undefined;
  private readonly recalled = new Map<string, ChatMessage[]>();

  constructor(
    @inject(PLUGIN_CONFIG) private readonly config: SemanticRecallConfig,
    @inject(EMBEDDING_PROVIDER) @optional() private readonly embeddings?: EmbeddingProvider,
  ) {}

  onInstall(host: PluginHost): void {
    if (!this.embeddings) {
      throw new TrellisError('InvalidConfig', 'Semantic recall needs an embedding provider', {
        hint: 'Bind one: Trellis.create({ providers: [{ provide: EMBEDDING_PROVIDER, useValue: new OpenAIEmbeddings({ … }) }] })',
      });
    }
    this.host = host;
    this.records = host.records;
  }

  @Hook('memory.write')
  @Requires({ key: MEMORY_USER_KEY, optional: true })
  async remember(entry: ToolCallOutcome | TurnExchange, ctx: HookContext): Promise<void> {
    if (entry.kind !== 'exchange' || entry.status !== 'completed' || !entry.reply) return;
    const user = memoryUser(ctx);
    if (!user) return;
    const turn = ctx.get<number>(KERNEL_KEYS.turnIndex) ?? 0;
    try {
      const [vector] = await this.embeddings!.embed([exchangeText(entry.input, entry.reply)], { signal: ctx.signal });
      const exchange: RecalledExchange = {
        sessionId: ctx.sessionId,
        turn,
        at: new Date().toISOString(),
        input: entry.input,
        reply: entry.reply,
        vector: vector!,
      };
      await this.records!.put(user, `${sessionPrefix(ctx.sessionId)}${String(turn).padStart(8, '0')}`, exchange);
      await this.prune(user);
    } catch (error) {
      this.host?.reportError(
        `An exchange was not remembered for recall: ${error instanceof Error ? error.message : String(error)}`,
        { code: 'EmbeddingFailed', point: 'memory.write', sessionId: ctx.sessionId },
      );
    }
  }

  @Hook('memory.read')
  @Requires({ key: MEMORY_USER_KEY, optional: true })
  async recall(payload: { readonly input: string }, ctx: HookContext): Promise<ChatMessage[]> {
    const user = memoryUser(ctx);
    if (!user || payload.input.trim() === '') return [];
    const cacheKey = JSON.stringify([ctx.sessionId, ctx.get<number>(KERNEL_KEYS.turnIndex) ?? 0, user, payload.input]);
    const cached = this.recalled.get(cacheKey);
    if (cached) return cached;
    let messages: ChatMessage[];
    try {
      messages = recallMessage(
        await this.search(user, payload.input, ctx.sessionId, ctx.signal),
        this.config.maxTokens,
      );
    } catch (error) {
      this.host?.reportError(`Recall was skipped: ${error instanceof Error ? error.message : String(error)}`, {
        code: 'EmbeddingFailed',
        point: 'memory.read',
        sessionId: ctx.sessionId,
      });
      messages = [];
    }
    if (this.recalled.size >= CACHE) this.recalled.delete(this.recalled.keys().next().value!);
    this.recalled.set(cacheKey, messages);
    return messages;
  }

  /** The user's exchanges most like `query`, best first, from sessions other than `exceptSession`. */
  async search(userId: string, query: string, exceptSession?: string, signal?: AbortSignal): Promise<RecallHit[]> {
    const [vector] = await this.embeddings!.embed([query], { signal });
    const all = await this.records!.list<RecalledExchange>(userId);
    return all
      .map((r) => r.value)
      .filter((e) => e.sessionId !== exceptSession && Array.isArray(e.vector) && e.vector.length === vector!.length)
      .map(({ vector: v, ...exchange }) => ({ exchange, score: cosineSimilarity(vector!, v) }))
      .filter((h) => h.score >= this.config.minScore)
      .sort((a, b) => b.score - a.score || b.exchange.at.localeCompare(a.exchange.at))
      .slice(0, this.config.topK);
  }

  /** The user's remembered exchanges, oldest first (for audits and exports). */
  async exchanges(userId: string): Promise<Omit<RecalledExchange, 'vector'>[]> {
    const all = await this.records!.list<RecalledExchange>(userId);
    return all.map(({ value: { vector: _vector, ...exchange } }) => exchange).sort((a, b) => a.at.localeCompare(b.at));
  }

  /** A user's erasure deletes all their exchanges; sessions' erasure deletes the exchanges of those sessions. */
  async onErase(request: EraseRequest): Promise<void> {
    const records = this.records!;
    if (request.selector.userId !== undefined) await records.delete({ subject: request.selector.userId });
    for (const sessionId of request.sessionIds) await records.delete({ keyPrefix: sessionPrefix(sessionId) });
    this.recalled.clear();
  }

  private async prune(user: string): Promise<void> {
    const all = await this.records!.list<RecalledExchange>(user);
    const over = all.length - this.config.maxEntries;
    if (over <= 0) return;
    const oldest = [...all]
      .sort((a, b) => a.value.at.localeCompare(b.value.at) || a.key.localeCompare(b.key))
      .slice(0, over);
    for (const r of oldest) await this.records!.delete({ subject: user, keyPrefix: r.key });
  }
}

function exchangeText(input: string, reply: string): string {
  return `User: ${input}\nAssistant: ${reply}`;
}

/** Keys of a session's exchanges start with a hash of its id: fixed length, so no session's prefix is another's. */
function sessionPrefix(sessionId: string): string {
  return `s-${createHash('sha256').update(sessionId).digest('hex').slice(0, 32)}-`;
}

/** The recalled exchanges as one system message within `maxTokens`, best first; none when nothing fits. */
export function recallMessage(hits: readonly RecallHit[], maxTokens: number): ChatMessage[] {
  const heading =
    'Relevant exchanges from earlier conversations with this user (most relevant first; they may be out of date):';
  let used = estimateTextTokens(heading);
  const lines: string[] = [];
  for (const { exchange } of hits) {
    const line = `- [${exchange.at.slice(0, 10)}] ${exchangeText(exchange.input, exchange.reply).replace(/\n/g, '\n  ')}`;
    const cost = estimateTextTokens(`\n${line}`);
    if (used + cost > maxTokens) continue;
    used += cost;
    lines.push(line);
  }
  return lines.length === 0 ? [] : [{ role: 'system', content: `${heading}\n${lines.join('\n')}` }];
}
