import { TrellisError } from '../../../../index.js';

/** The response as a handler gets it: Node's `ServerResponse` (Express), or a reply that wraps it in `raw` (Fastify). */
export interface HttpResponseLike {
  readonly raw?: unknown;
}

interface ClosingResponse {
  readonly writableFinished?: boolean;
  on(event: 'close', listener: () => void): unknown;
  off?(event: 'close', listener: () => void): unknown;
}

/** A signal that fires when the client goes away before the answer was sent, and how to stop watching. */
export interface ClientAbort {
  readonly signal: AbortSignal;
  /** The answer is on its way: stop watching the connection. */
  dispose(): void;
}

/**
 * Watches the connection of one request: its `signal` aborts (`Cancelled`) when the response
 * closes before it was finished — the client disconnected, or aborted the request — so the
 * turn it started stops. A response that finished never fires it. Without a Node response to
 * watch (a transport this does not know), the signal never fires.
 */
export function clientAbort(res: HttpResponseLike | undefined): ClientAbort {
  const controller = new AbortController();
  const raw = closingResponse(res);
  if (raw === undefined) return { signal: controller.signal, dispose: () => undefined };
  const onClose = () => {
    if (raw.writableFinished === true) return;
    controller.abort(
      new TrellisError('Cancelled', 'The client closed the request before the turn ended', {
        hint: 'Send the message again to retry; the turn was not completed',
      }),
    );
  };
  raw.on('close', onClose);
  return { signal: controller.signal, dispose: () => raw.off?.('close', onClose) };
}

function closingResponse(res: HttpResponseLike | undefined): ClosingResponse | undefined {
  for (const candidate of [res?.raw, res]) {
    if (
      typeof candidate === 'object' &&
      candidate !== null &&
      typeof (candidate as ClosingResponse).on === 'function' &&
      'writableFinished' in candidate
    )
      return candidate as ClosingResponse;
  }
  return undefined;
}
