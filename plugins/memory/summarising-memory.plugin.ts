import {
  inject,
  optional,
  Hook,
  Plugin,
  StateKey,
  Transform,
  type InferenceRequest,
  type HookContext,
  type PluginContext,
  TrellisError,
  type PluginHost,
  type PluginLifecycle,
  type ChatMessage,
  PLUGIN_CONFIG,
  type ToolCallOutcome,
  type TurnExchange,
} from 'trellis/plugin';
import { latestTurnStart } from './conversation.js';
import { SummarisingMemoryConfig } from './summarising-memory.config.js';
import { asSummariser, SUMMARISER, type Summariser, type SummariserFn, type SummaryExchange } from './summariser.js';
import { clipToTokens } from './token-estimate.js';

/** What summarising memory keeps per session. */
export interface SummaryState {
  /** The running summary of every folded exchange ('' before the first fold). */
  readonly summary: string;
  /** How many exchanges the summary covers. */
  readonly folded: number;
  /** Completed exchanges not folded yet, oldest first (at most `keepTurns` after a fold). */
  readonly recent: readonly SummaryExchange[];
}

/** Session-level, persistent: the session's {@link SummaryState}. */
export const SUMMARY_STATE_KEY = 'memory.summary.state';
const EMPTY: SummaryState = { summary: '', folded: 0, recent: [] };

/**
 * Summarising memory: completed turns older than the last `keepTurns` are folded into a
 * running summary, kept within `summaryMaxTokens`, by the bound {@link SUMMARISER} (a
 * {@link ModelSummariser} over the agent's model, or any function).
 *
 * - `memory.write` (plugin priority, default 100): on each turn's exchange, once more than
 *   `keepTurns` exchanges wait, folds the oldest into the summary (in the persistent
 *   session key `memory.summary.state`). A failing summariser fails nothing: the
 *   exchanges wait for the next turn and an `error` event (`SummaryFailed`) is emitted.
 * - transform (priority 500, before the context window's 1000): when there is a summary,
 *   replaces the conversation older than the last `keepTurns` turns of the request with
 *   one system message holding the summary, after the leading system messages. System
 *   messages and the latest turn are never removed. The request's turns are counted by
 *   user messages, so a turn that was blocked (no exchange to summarise) still takes a
 *   place in the window.
 */
@Plugin({
  name: 'memory.summary',
  version: '1.0.0',
  description: 'Folds old turns into a running summary',
  config: SummarisingMemoryConfig,
})
@StateKey(SUMMARY_STATE_KEY, { scope: 'session', merge: 'exclusive', persistent: true })
export class SummarisingMemory implements PluginLifecycle {
  private readonly summariser: Summariser;
  private host: PluginHost | undefined;

  constructor(
    @inject(PLUGIN_CONFIG) private readonly config: SummarisingMemoryConfig,
    @inject(SUMMARISER) @optional() summariser?: Summariser | SummariserFn,
  ) {
    if (!summariser) {
      throw new TrellisError('InvalidPlugin', 'Summarising memory has no summariser', {
        hint: 'Bind one: Trellis.create({ providers: [{ provide: SUMMARISER, useValue: new ModelSummariser(model) }] }) or a function (request) => summary',
      });
    }
    this.summariser = asSummariser(summariser);
  }

  onInstall(host: PluginHost): void {
    this.host = host;
  }

  @Hook('memory.write')
  async fold(entry: ToolCallOutcome | TurnExchange, ctx: HookContext): Promise<void> {
    if (entry.kind !== 'exchange') return;
    const state = ctx.get<SummaryState>(SUMMARY_STATE_KEY) ?? EMPTY;
    const recent = [...state.recent, { input: entry.input, reply: entry.reply }];
    const { keepTurns, summaryMaxTokens } = this.config;
    if (recent.length <= keepTurns) {
      ctx.set(SUMMARY_STATE_KEY, { ...state, recent });
      return;
    }
    const folding = recent.slice(0, recent.length - keepTurns);
    try {
      const text = await this.summariser.summarise({
        previous: state.summary || undefined,
        exchanges: folding,
        maxTokens: summaryMaxTokens,
        signal: ctx.signal,
      });
      ctx.set(SUMMARY_STATE_KEY, {
        summary: clipToTokens(text.trim(), summaryMaxTokens),
        folded: state.folded + folding.length,
        recent: recent.slice(folding.length),
      });
    } catch (error) {
      ctx.set(SUMMARY_STATE_KEY, { ...state, recent });
      this.host?.reportError(
        `The summariser failed; ${folding.length} exchange(s) wait for the next turn: ${error instanceof Error ? error.message : String(error)}`,
        { code: 'SummaryFailed', point: 'memory.write', sessionId: ctx.sessionId },
      );
    }
  }

  @Transform({ priority: 500 })
  applySummary(request: InferenceRequest, ctx: PluginContext): InferenceRequest {
    const state = ctx.get<SummaryState>(SUMMARY_STATE_KEY);
    if (!state?.summary) return request;
    const messages = request.messages;
    const latest = latestTurnStart(messages);
    if (latest < 0) return request;
    let head = 0;
    while (head < latest && messages[head]!.role === 'system') head++;
    const users: number[] = [];
    for (let i = head; i < latest; i++) if (messages[i]!.role === 'user') users.push(i);
    const keep = this.config.keepTurns;
    const keepFrom = keep === 0 ? latest : users.length > keep ? users[users.length - keep]! : head;
    const summary: ChatMessage = {
      role: 'system',
      content: `Summary of the earlier conversation (${state.folded} exchange${state.folded === 1 ? '' : 's'}):\n${state.summary}`,
    };
    const keptSystem = messages.slice(head, keepFrom).filter((m) => m.role === 'system');
    return { ...request, messages: [...messages.slice(0, head), summary, ...keptSystem, ...messages.slice(keepFrom)] };
  }
}
