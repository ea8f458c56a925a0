import type { IncomingMessage, ServerResponse } from 'node:http';
import { getRequestListener } from '@hono/node-server';
import { createChatHandler, type ChatHandlerOptions } from './chat-handler.js';

/**
 * {@link createChatHandler} as a Node `http` (or Express) request listener.
 *
 * @example
 * createServer(chatRequestListener({ agent })).listen(3000);
 */
export function chatRequestListener(options: ChatHandlerOptions): (req: IncomingMessage, res: ServerResponse) => Promise<void> {
  return getRequestListener(createChatHandler(options));
}
