/**
 * `trellis/plugins/memory`: transcript memory, summarising memory, the context-window
 * transform, semantic recall and working memory, with their config classes, tokens and
 * state keys. See docs/plugins/memory.md.
 */
export { TranscriptMemory, TRANSCRIPT_EXCHANGES_KEY } from './transcript-memory.plugin.js';
export { TranscriptMemoryConfig } from './transcript-memory.config.js';
export type { ExchangeRecord, RecordedToolCall } from './exchange-record.js';
export { SummarisingMemory, SUMMARY_STATE_KEY, type SummaryState } from './summarising-memory.plugin.js';
export { SummarisingMemoryConfig } from './summarising-memory.config.js';
export { SUMMARISER, ModelSummariser } from './summariser.js';
export type { Summariser, SummariserFn, SummaryRequest, SummaryExchange } from './summariser.js';
export { ContextWindowTransform } from './context-window.transform.js';
export { ContextWindowConfig } from './context-window.config.js';
export { trimToWindow } from './trim-to-window.js';
export { SemanticRecall, type RecalledExchange, type RecallHit } from './semantic-recall.plugin.js';
export { SemanticRecallConfig } from './semantic-recall.config.js';
export {
  WorkingMemory,
  WorkingMemoryNotes,
  workingMemoryPlugin,
  type WorkingMemoryOptions,
  type WorkingMemoryPluginApi,
} from './working-memory.plugin.js';
export { WorkingMemoryConfig } from './working-memory.config.js';
export { MEMORY_USER_KEY } from './user-key.js';
