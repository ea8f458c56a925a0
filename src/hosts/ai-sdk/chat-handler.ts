import { createUIMessageStream, createUIMessageStreamResponse, type UIMessageChunk } from 'ai';
import { TrellisError, type Agent, type SessionAccess } from '../../../index.js';
import { boundedText } from '../ui-turns/bounded-body.js';
import { httpStatusOf, turnGuard, type TurnAccessOptions } from '../ui-turns/turn-access.js';
import { runWatched, streamable, type TurnSession } from '../ui-turns/turn-session.js';
import { readChatRequest, type ChatRequest } from './chat-request.js';
import { ChatStreams } from './chat-streams.js';
import { UiChunkWriter } from './ui-chunk-writer.js';

/** Options of {@link uiMessageStream}. */
export interface UiStreamOptions {
  /** Aborting it cancels the turn. */
  readonly signal?: AbortSignal;
  /** Turn-level host context (`app.*` keys) for this request, e.g. the caller's scopes. */
  readonly context?: Readonly<Record<string, unknown>>;
  /** Records the stream so a client that reconnects gets what it missed. */
  readonly streams?: ChatStreams;
  /** The caller and the owner their access was checked against (see `authorizeSessionAccess`): the kernel checks it again. */
  readonly access?: SessionAccess;
}

/**
 * Runs the request's turn (a new message, or approval decisions that resume it) and streams
 * it as the AI SDK's UI message stream: the chunks `useChat` and `readUIMessageStream` read.
 * A request that cannot run (the session is busy, a decision names no waiting call) streams
 * an `error` chunk with the Trellis code and message.
 *
 * @example
 * const stream = uiMessageStream(streamable(agent.session(chatId)), readChatRequest(body));
 * return createUIMessageStreamResponse({ stream });
 */
export function uiMessageStream(
  session: TurnSession,
  request: ChatRequest,
  options: UiStreamOptions = {},
): ReadableStream<UIMessageChunk> {
  // Recorded under the session id: a reconnect resolves its chat id the same way, so it finds only its own.
  const recording = options.streams?.open(session.id, options.access?.principal);
  return createUIMessageStream({
    execute: async ({ writer }) => {
      const chunks = new UiChunkWriter(
        session.id,
        (chunk) => {
          writer.write(chunk);
          recording?.write(chunk);
        },
        request.known,
      );
      chunks.start(request.continues);
      try {
        await runWatched(
          session,
          request.action,
          {
            event: (event) => chunks.event(event),
            result: (result) => chunks.result(result),
            error: (error) =>
              chunks.failure(TrellisError.is(error) ? `${error.code}: ${error.message}` : 'Internal error'),
          },
          { signal: options.signal, context: options.context, access: options.access },
        );
      } finally {
        recording?.close();
      }
    },
  });
}

/**
 * Options of {@link createChatHandler}. Without `principal`, any caller who knows a chat id
 * reaches that session: give it (who the caller is), and each chat's session is owned by the
 * caller who opened it, checked by `policy` on every request (streaming a reconnect too).
 */
export interface ChatHandlerOptions extends TurnAccessOptions<Request> {
  /** The agent whose sessions the chats are (the chat id is the session id)... */
  readonly agent?: Agent;
  /**
   * ...or the session of a chat, e.g. a Nest `HostedSession`, or an id scoped to the signed-in
   * user: `(chatId, request) => streamable(agent.session(\`${user(request)}:${chatId}\`))`.
   */
  readonly session?: (chatId: string, request: Request) => TurnSession | Promise<TurnSession>;
  /** Turn-level host context for a request (the caller's user and scopes); `undefined` for none. */
  readonly context?: (
    request: Request,
  ) => Readonly<Record<string, unknown>> | undefined | Promise<Readonly<Record<string, unknown>> | undefined>;
  /** The largest request body taken. Default 1 MiB. */
  readonly maxBodyBytes?: number;
}

/**
 * A fetch-style handler (`(Request) => Promise<Response>`, as Hono, Next route handlers and
 * `@hono/node-server`'s `getRequestListener` for Node `http` take) speaking to `useChat`:
 * `POST <any path>` with the chat request runs the turn and answers the UI message stream;
 * `GET <path ending in /:id/stream>` resumes the chat's running stream (204 when none runs in
 * this process). A bad request is a 400 `{ code, message }`. A client that disconnects does
 * not cancel the turn: it lands, and a reconnect picks it up.
 *
 * @example
 * const chat = createChatHandler({ agent });
 * new Hono().post('/api/chat', (c) => chat(c.req.raw)).get('/api/chat/:id/stream', (c) => chat(c.req.raw));
 */
export function createChatHandler(options: ChatHandlerOptions): (request: Request) => Promise<Response> {
  if (!options.agent && !options.session)
    throw new TrellisError('InvalidOptions', 'createChatHandler needs an agent or a session resolver', {
      hint: 'Pass { agent } or { session: (chatId, request) => … }',
    });
  const streams = new ChatStreams();
  const guard = turnGuard(options, 'The chat endpoint');
  const sessionOf = (chatId: string, request: Request) =>
    options.session ? options.session(chatId, request) : streamable(options.agent!.session(chatId));
  return async (request) => {
    try {
      if (request.method === 'GET') {
        const id = /\/([^/]+)\/stream\/?$/.exec(new URL(request.url).pathname)?.[1];
        if (id === undefined) return problem(404, 'NotFound', 'Resume a chat stream with GET <api>/<chat id>/stream');
        const session = await sessionOf(decodeURIComponent(id), request);
        await guard(session, 'read', request, await options.context?.(request), () => streams.ownerNow(session));
        const replay = streams.replay(session.id);
        return replay ? createUIMessageStreamResponse({ stream: replay }) : new Response(null, { status: 204 });
      }
      if (request.method !== 'POST')
        return problem(405, 'MethodNotAllowed', 'POST the chat request, or GET <api>/<chat id>/stream');
      const chat = readChatRequest(await readJson(request, options.maxBodyBytes ?? 1024 * 1024));
      const session = await sessionOf(chat.chatId, request);
      const context = await options.context?.(request);
      const access = await guard(session, chat.action.kind === 'send' ? 'send' : 'decide', request, context, () =>
        streams.ownerNow(session),
      );
      return createUIMessageStreamResponse({ stream: uiMessageStream(session, chat, { context, streams, access }) });
    } catch (error) {
      const status = httpStatusOf(error);
      if (status !== 500 && TrellisError.is(error)) return problem(status, error.code, error.message);
      return problem(500, 'Internal', 'Internal error');
    }
  };
}

async function readJson(request: Request, limit: number): Promise<unknown> {
  const text = await boundedText(request, limit, 'Send only the last message: { id, message }');
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new TrellisError('InvalidOptions', 'The request body is not JSON', {
      hint: 'POST the JSON body useChat sends',
    });
  }
}

function problem(status: number, code: string, message: string): Response {
  return Response.json({ statusCode: status, code, message }, { status });
}
