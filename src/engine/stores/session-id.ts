import { TrellisError } from '../../errors/trellis-error.js';

/**
 * Refuses a session id no store can keep: not a string, empty, or holding a NUL (PostgreSQL
 * refuses `\u0000` in text, so every store and `agent.session` refuse it the same way, and a
 * session opened on one store can move to another).
 *
 * @throws TrellisError `InvalidOptions`
 */
export function assertSessionId(sessionId: unknown): asserts sessionId is string {
  if (typeof sessionId === 'string' && sessionId.length > 0 && !sessionId.includes('\u0000')) return;
  const what =
    typeof sessionId !== 'string'
      ? `a ${typeof sessionId}`
      : sessionId.length === 0
        ? 'an empty id'
        : `${JSON.stringify(sessionId)}, which holds a NUL character`;
  throw new TrellisError(
    'InvalidOptions',
    `A session id must be a non-empty string without NUL characters; got ${what}`,
    {
      hint: 'Use ids made of printable characters, e.g. a UUID (agent.session() makes one)',
    },
  );
}
