import type { Context } from 'hono';
import { streamSSE } from 'hono/streaming';
import { filter } from 'rxjs';
import type { TrellisEvent } from '../../../../index.js';
import { shrinkEvent } from '../recording/shrink-event.js';
import type { DevApp } from './dev-host.js';

/** A comment line keeps idle connections (and proxies) from timing out. */
const KEEPALIVE_MS = 15_000;

/**
 * `GET /api/events?session=<id>`: that session's events as Server-Sent Events, model text
 * deltas included, while the page is open. Without `session`: every session's
 * `turn.started` and `turn.finished`, for the sessions list. `closing` ends every stream
 * when the server stops.
 */
export function devEventsRoute(c: Context, app: DevApp, closing: AbortSignal) {
  const sessionId = c.req.query('session');
  const wanted = (event: TrellisEvent) =>
    sessionId !== undefined
      ? 'sessionId' in event && event.sessionId === sessionId
      : event.type === 'turn.started' || event.type === 'turn.finished';
  return streamSSE(c, async (stream) => {
    const subscription = app.events$.pipe(filter(wanted)).subscribe((event) => {
      void stream.writeSSE({ data: JSON.stringify(shrinkEvent(event)) }).catch(() => undefined);
    });
    const keepalive = setInterval(() => void stream.write(': keepalive\n\n').catch(() => undefined), KEEPALIVE_MS);
    try {
      await stream.write(': connected\n\n');
      await new Promise<void>((resolve) => {
        stream.onAbort(resolve);
        if (closing.aborted) resolve();
        closing.addEventListener('abort', () => resolve(), { once: true });
        subscription.add(() => resolve());
      });
    } finally {
      clearInterval(keepalive);
      subscription.unsubscribe();
    }
  });
}
