import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { pipeUIMessageStreamToResponse } from 'ai';
import { TrellisError } from '../../index.js';
import type { TurnSession } from '../ui-turns/turn-session.js';
import { createChatHandler, uiMessageStream, type ChatHandlerOptions } from './chat-handler.js';
import { readChatRequest, type ChatRequest } from './chat-request.js';
import type { ChatStreams } from './chat-streams.js';

/**
 * {@link createChatHandler} as a Node `http` (or Express) request listener.
 *
 * @example
 * createServer(chatRequestListener({ agent })).listen(3000);
 */
export function chatRequestListener(options: ChatHandlerOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return getRequestListener(createChatHandler(options));
}

/** Options of {@link serveChatRequest}. */
export interface ServeChatOptions {
  /** Records the stream so a client that reconnects gets what it missed. */
  readonly streams?: ChatStreams;
  readonly context?: Readonly<Record<string, unknown>>;
}

/**
 * Answers one parsed useChat request body on a Node response, for hosts that already have
 * both (a Nest controller with `@Body()` and `@Res()`): the UI message stream of the turn,
 * or a 400 `{ statusCode, code, message }` for a body that is not a chat request.
 */
export async function serveChatRequest(body: unknown, sessionOf: (chatId: string) => TurnSession, response: ServerResponse, options: ServeChatOptions = {}): Promise<void> {
  let chat: ChatRequest;
  try {
    chat = readChatRequest(body);
  } catch (error) {
    const message = TrellisError.is(error) ? error.message : 'Bad request';
    response.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ statusCode: 400, code: TrellisError.is(error) ? error.code : 'InvalidOptions', message }));
    return;
  }
  pipeUIMessageStreamToResponse({ response, stream: uiMessageStream(sessionOf(chat.chatId), chat, { streams: options.streams, context: options.context }) });
}

/**
 * Answers a reconnect (`GET …/:id/stream`) on a Node response: the chat's running stream
 * from its start, or 204 when none runs in this process.
 */
export function serveChatReconnect(chatId: string, streams: ChatStreams, response: ServerResponse): void {
  const replay = streams.replay(chatId);
  if (!replay) return void response.writeHead(204).end();
  pipeUIMessageStreamToResponse({ response, stream: replay });
}
