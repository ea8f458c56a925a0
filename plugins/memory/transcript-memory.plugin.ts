import {
  inject,
  Hook,
  Plugin,
  StateKey,
  Tool,
  type HookContext,
  type ToolContext,
  PLUGIN_CONFIG,
  KERNEL_KEYS,
  type ToolCallOutcome,
  type TurnExchange,
} from 'trellis/plugin';
import type { ExchangeRecord, RecordedToolCall } from './exchange-record.js';
import { RecallInput } from './recall-input.js';
import { TranscriptMemoryConfig } from './transcript-memory.config.js';

/** Session-level, persistent: the session's {@link ExchangeRecord}s, oldest first. */
export const TRANSCRIPT_EXCHANGES_KEY = 'memory.transcript.exchanges';
/** Turn-level: the tool calls of the running turn, until its exchange is recorded. */
const TURN_TOOLS_KEY = 'memory.transcript.turn_tools';
const NONE: readonly ExchangeRecord[] = [];

/**
 * Records every completed exchange of a session (message, reply, status, tool calls) in
 * the persistent session key `memory.transcript.exchanges`, so it is checkpointed with
 * the session and survives a restart; and offers recall of it.
 *
 * It adds nothing to the request: the kernel already sends the session's transcript with
 * every model call, so injecting it again would duplicate it. Recall is for what the
 * request no longer holds (after {@link ContextWindowTransform} trimmed it, or summarising
 * memory folded it): the model calls the `memory.transcript.recall` tool, the host calls
 * {@link TranscriptMemory.exchanges}.
 *
 * Hooks: `memory.write` (plugin priority, default 100) for tool results and exchanges.
 */
@Plugin({
  name: 'memory.transcript',
  version: '1.0.0',
  description: 'Records every exchange of a session and recalls them',
  config: TranscriptMemoryConfig,
})
@StateKey(TRANSCRIPT_EXCHANGES_KEY, { scope: 'session', merge: 'commutative', persistent: true })
@StateKey(TURN_TOOLS_KEY, { scope: 'turn', merge: 'commutative' })
export class TranscriptMemory {
  constructor(@inject(PLUGIN_CONFIG) private readonly config: TranscriptMemoryConfig) {}

  @Hook('memory.write')
  record(entry: ToolCallOutcome | TurnExchange, ctx: HookContext): void {
    if (entry.kind === 'tool_result') {
      if (!this.config.recordToolCalls) return;
      const call: RecordedToolCall = entry.ok
        ? { tool: entry.call.tool, ok: true }
        : { tool: entry.call.tool, ok: false, error: entry.error?.code };
      ctx.update<RecordedToolCall[]>(TURN_TOOLS_KEY, (previous) => [...(previous ?? []), call]);
      return;
    }
    const record: ExchangeRecord = {
      turn: ctx.get<number>(KERNEL_KEYS.turnIndex) ?? 0,
      input: entry.input,
      reply: entry.reply,
      status: entry.status,
      at: new Date().toISOString(),
      toolCalls: ctx.get<RecordedToolCall[]>(TURN_TOOLS_KEY) ?? [],
    };
    const max = this.config.maxExchanges;
    ctx.update<ExchangeRecord[]>(TRANSCRIPT_EXCHANGES_KEY, (previous) => {
      const next = [...(previous ?? []), record];
      return next.length > max ? next.slice(next.length - max) : next;
    });
  }

  @Tool({
    name: 'memory.transcript.recall',
    description:
      'Recalls earlier exchanges of this conversation (the user message and your reply), newest last. Use when the user refers to something said earlier that is no longer in view; not for facts outside this conversation.',
    input: RecallInput,
  })
  recall(
    input: RecallInput,
    ctx: ToolContext,
  ): { exchanges: { turn: number; input: string; reply: string | undefined }[] } {
    const all = ctx.get<ExchangeRecord[]>(TRANSCRIPT_EXCHANGES_KEY) ?? NONE;
    const needle = input.contains?.toLowerCase();
    const matching = needle
      ? all.filter((e) => e.input.toLowerCase().includes(needle) || (e.reply ?? '').toLowerCase().includes(needle))
      : all;
    const count = Math.min(input.last ?? this.config.recallLimit, this.config.recallLimit);
    return { exchanges: matching.slice(-count).map((e) => ({ turn: e.turn, input: e.input, reply: e.reply })) };
  }

  /** A session's recorded exchanges, oldest first; the last `last` of them when given. */
  exchanges(session: { readonly values: Readonly<Record<string, unknown>> }, last?: number): readonly ExchangeRecord[] {
    const all = (session.values[TRANSCRIPT_EXCHANGES_KEY] as ExchangeRecord[] | undefined) ?? NONE;
    return last === undefined ? all : all.slice(-last);
  }
}
