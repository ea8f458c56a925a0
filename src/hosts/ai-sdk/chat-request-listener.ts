import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { pipeUIMessageStreamToResponse } from 'ai';
import { TrellisError, type SessionAccess } from '../../../index.js';
import { httpStatusOf } from '../ui-turns/turn-access.js';
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
export function chatRequestListener(
  options: ChatHandlerOptions,
): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return getRequestListener(createChatHandler(options));
}

/** Options of {@link serveChatRequest}. */
export interface ServeChatOptions {
  /** Records the stream so a client that reconnects gets what it missed. */
  readonly streams?: ChatStreams;
  readonly context?: Readonly<Record<string, unknown>>;
  /**
   * Asked once the body is read, before anything runs: the caller's access to the chat's
   * session for a new message (`send`) or approval responses (`decide`), handed to the kernel.
   * Throw `Unauthenticated` / `AuthDenied` to answer 401 / 403.
   */
  readonly authorize?: (session: TurnSession, action: 'send' | 'decide') => Promise<SessionAccess | undefined>;
}

/**
 * Answers one parsed useChat request body on a Node response, for hosts that already have
 * both (a Nest controller with `@Body()` and `@Res()`): the UI message stream of the turn,
 * or a 400 `{ statusCode, code, message }` for a body that is not a chat request (401 / 403
 * when `authorize` refuses the caller).
 */
export async function serveChatRequest(
  body: unknown,
  sessionOf: (chatId: string) => TurnSession,
  response: ServerResponse,
  options: ServeChatOptions = {},
): Promise<void> {
  let chat: ChatRequest;
  let session: TurnSession;
  let access: SessionAccess | undefined;
  try {
    chat = readChatRequest(body);
    session = sessionOf(chat.chatId);
    access = await options.authorize?.(session, chat.action.kind === 'send' ? 'send' : 'decide');
  } catch (error) {
    return problem(response, error);
  }
  void pipeUIMessageStreamToResponse({
    response,
    stream: uiMessageStream(session, chat, { streams: options.streams, context: options.context, access }),
  });
}

/**
 * Answers a reconnect (`GET …/:id/stream`) on a Node response: the chat's running stream
 * from its start, or 204 when none runs in this process; 401 / 403 when `authorize` (the
 * caller's `read` access) throws `Unauthenticated` / `AuthDenied`.
 */
export async function serveChatReconnect(
  chatId: string,
  streams: ChatStreams,
  response: ServerResponse,
  options: { readonly authorize?: () => Promise<unknown> } = {},
): Promise<void> {
  try {
    await options.authorize?.();
  } catch (error) {
    return problem(response, error);
  }
  const replay = streams.replay(chatId);
  if (!replay) return void response.writeHead(204).end();
  void pipeUIMessageStreamToResponse({ response, stream: replay });
}

/** A Trellis error as `{ statusCode, code, message }` with its HTTP status; anything else a 500 without its internals. */
function problem(response: ServerResponse, error: unknown): void {
  const status = httpStatusOf(error);
  const known = status !== 500 && TrellisError.is(error);
  const body = {
    statusCode: status,
    code: known ? error.code : 'Internal',
    message: known ? error.message : 'Internal error',
  };
  response.writeHead(status, { 'content-type': 'application/json' }).end(JSON.stringify(body));
}
