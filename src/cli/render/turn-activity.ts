import { filter, merge, type Observable } from 'rxjs';
import type { TrellisEvent } from '../../events/trellis-event.js';

/**
 * Everything the CLI shows about one session's turn: the session's own events, plus the
 * `tool.retry` events that retry middleware reports on the app's stream (middleware has no
 * session stream of its own). Each event arrives once, whichever stream carries it.
 */
export function turnActivity$(appEvents$: Observable<TrellisEvent>, sessionEvents$: Observable<TrellisEvent>, sessionId: string): Observable<TrellisEvent> {
  return merge(
    sessionEvents$.pipe(filter((event) => event.type !== 'tool.retry')),
    appEvents$.pipe(filter((event) => event.type === 'tool.retry' && event.sessionId === sessionId)),
  );
}
