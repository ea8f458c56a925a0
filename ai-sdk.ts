import 'reflect-metadata';

/**
 * The AI SDK's UI message stream for Trellis sessions: `import { createChatHandler } from
 * 'trellis/ai-sdk'`, so a `useChat` front end (`@ai-sdk/react`) talks to a Trellis agent —
 * text, tool calls, approvals as the protocol's tool-approval parts. A separate entry so that
 * importing `trellis` does not load the `ai` package. See docs/ai-sdk.md.
 */
export {
  createChatHandler,
  uiMessageStream,
  type ChatHandlerOptions,
  type UiStreamOptions,
} from './src/hosts/ai-sdk/chat-handler.js';
export {
  chatRequestListener,
  serveChatRequest,
  serveChatReconnect,
  type ServeChatOptions,
} from './src/hosts/ai-sdk/chat-request-listener.js';
export { readChatRequest, type ChatRequest } from './src/hosts/ai-sdk/chat-request.js';
export { ChatStreams } from './src/hosts/ai-sdk/chat-streams.js';
export { UiChunkWriter, type TrellisMessageMetadata } from './src/hosts/ai-sdk/ui-chunk-writer.js';
export { streamable, type TurnSession, type TurnAction } from './src/hosts/ui-turns/turn-session.js';
