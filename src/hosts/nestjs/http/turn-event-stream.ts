import { PassThrough } from 'node:stream';
import { HttpException, StreamableFile } from '@nestjs/common';
import type { TurnResult } from '../../../../index.js';
import type { HostedSession } from '../hosted-session.js';
import { turnResultView } from './http-views.js';
import { toHttpException } from './trellis-http-exception.js';

/**
 * Streams one turn as Server-Sent Events: each of the session's events while the turn runs
 * (`event: <type>`), then `event: result` with the `TurnResult`, or `event: error` with
 * `{ code, message }`. The turn starts once the event subscription is in place (on the
 * worker queue, once Redis confirmed it), so no event of it is missed. A client that
 * disconnects aborts the signal `run` is given, which stops the turn.
 */
export async function turnEventStream(
  session: HostedSession,
  run: (signal: AbortSignal) => Promise<TurnResult>,
): Promise<StreamableFile> {
  const stream = new PassThrough();
  const cancel = new AbortController();
  const write = sseWriter(stream);
  let stop: () => void;
  try {
    stop = await session.watch((event) => write(event.type, event, eventId(event)));
  } catch (error) {
    throw toHttpException(error);
  }
  stream.on('close', () => cancel.abort(new Error('The client closed the event stream')));
  void run(cancel.signal)
    .then(
      (result) => write('result', turnResultView(result)),
      (error: unknown) => {
        const http = toHttpException(error);
        const body =
          http instanceof HttpException
            ? http.getResponse()
            : { statusCode: 500, code: 'Internal', message: 'Internal error' };
        write('error', body);
      },
    )
    .finally(() => {
      stop();
      stream.end();
    });
  return new StreamableFile(stream, { type: 'text/event-stream' });
}

/**
 * The events of a session as Server-Sent Events, as long as the client stays: with the
 * worker queue each carries its stream id (`id:`), and a client that reconnects with
 * `Last-Event-ID` (or `?after=`) first gets what it missed. In process there is no stream to
 * replay from: only live events come.
 */
export async function sessionEventStream(session: HostedSession, after: string | undefined): Promise<StreamableFile> {
  const stream = new PassThrough();
  const write = sseWriter(stream);
  let stop: () => void;
  try {
    stop = await session.watch(
      (event) => write(event.type, event, eventId(event)),
      after === undefined ? {} : { after },
    );
  } catch (error) {
    throw toHttpException(error);
  }
  stream.on('close', () => stop());
  // A comment line, so the response's headers go out now rather than with the first event.
  stream.write(': watching\n\n');
  return new StreamableFile(stream, { type: 'text/event-stream' });
}

function sseWriter(stream: PassThrough): (event: string, data: unknown, id?: string) => void {
  return (event, data, id) => {
    if (!stream.writableEnded)
      stream.write(`${id === undefined ? '' : `id: ${id}\n`}event: ${event}\ndata: ${JSON.stringify(data)}\n\n`);
  };
}

/** A queued event's stream id; none for an event of a turn in process. */
function eventId(event: object): string | undefined {
  const id = (event as { id?: unknown }).id;
  return typeof id === 'string' ? id : undefined;
}
