import { describeError } from '../../errors/describe-error.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { SessionStore, StoredSession } from '../stores/session-store.js';

/**
 * Which sessions to erase: one session, a user's (`app.user_id` in the session context the
 * host opened it with), a tenant's (`app.tenant`), or those not updated since a time. Criteria given
 * together must all hold.
 */
export interface EraseSelector {
  readonly sessionId?: string;
  readonly userId?: string;
  readonly tenant?: string;
  /** Sessions whose last update is before this (a `Date` or ISO text): retention. */
  readonly olderThan?: Date | string;
}

/** What a plugin's `onErase(request)` (and a {@link SessionEraser}) is told: the sessions being erased and why. */
export interface EraseRequest {
  readonly sessionIds: readonly string[];
  readonly selector: EraseSelector;
  /**
   * The users (`app.user_id`) the erased sessions were opened for; with a `userId` selector,
   * that user, even when no session of theirs is stored (their data may live elsewhere).
   */
  readonly userIds: readonly string[];
}

/**
 * Something outside the store and the plugins that keeps sessions' data, erased with them
 * (`app.erase(selector, { also: [queue] })`): a `TurnQueue` removes the sessions' jobs from Redis.
 * A throw stops the erasure before any session is deleted, as a plugin's `onErase` does.
 */
export interface SessionEraser {
  eraseSessions(request: EraseRequest): Promise<unknown>;
}

/** Options of `app.erase`. */
export interface EraseOptions {
  /** More places that keep the sessions' data, erased before the store's rows (e.g. the app's `TurnQueue`). */
  readonly also?: readonly SessionEraser[];
}

/** What `app.erase` did. */
export interface EraseReport {
  readonly sessions: readonly string[];
  /** Plugins whose `onErase` ran, by name. */
  readonly plugins: readonly string[];
  /** The `also` erasers that ran, by class name (`TurnQueue`). */
  readonly also: readonly string[];
}

/** Where a stored session says whom it is about: `{ userId?, tenant? }`, from the host's `app.user_id` / `app.tenant` session context. */
const SUBJECT_KEY = 'trellis.subject';

/** Checks a selector; at least one criterion, each the right type. */
export function checkSelector(selector: EraseSelector): { cutoff: number | undefined } {
  const given = ['sessionId', 'userId', 'tenant', 'olderThan'].filter(
    (k) => (selector as Record<string, unknown>)[k] !== undefined,
  );
  const bad = (why: string) =>
    new TrellisError('InvalidOptions', `erase(): ${why}`, {
      hint: "Pass { userId: 'u-42' }, { sessionId }, { tenant } or { olderThan: new Date(Date.now() - 30 * 864e5) }",
    });
  if (given.length === 0)
    throw bad('name what to erase: sessionId, userId, tenant or olderThan (erasing everything is not a selector)');
  for (const key of ['sessionId', 'userId', 'tenant'] as const) {
    const v = selector[key];
    if (v !== undefined && (typeof v !== 'string' || v.length === 0)) throw bad(`${key} must be a non-empty string`);
  }
  let cutoff: number | undefined;
  if (selector.olderThan !== undefined) {
    cutoff = selector.olderThan instanceof Date ? selector.olderThan.getTime() : Date.parse(selector.olderThan);
    if (Number.isNaN(cutoff)) throw bad(`olderThan must be a Date or an ISO time, got ${String(selector.olderThan)}`);
  }
  return { cutoff };
}

/** The stored sessions the selector picks, and the users they were opened for (loaded one by one: a store needs no index for this). */
export async function sessionsToErase(
  store: SessionStore,
  selector: EraseSelector,
): Promise<{ sessionIds: string[]; userIds: string[] }> {
  const { cutoff } = checkSelector(selector);
  const candidates = selector.sessionId !== undefined ? [selector.sessionId] : (await store.list()).map((s) => s.id);
  const sessionIds: string[] = [];
  const userIds = new Set<string>(selector.userId !== undefined ? [selector.userId] : []);
  for (const id of candidates) {
    const session = await store.load(id);
    if (!session || !matches(session, selector, cutoff)) continue;
    sessionIds.push(id);
    const userId = subjectOf(session).userId;
    if (typeof userId === 'string') userIds.add(userId);
  }
  return { sessionIds, userIds: [...userIds] };
}

function subjectOf(session: StoredSession): { userId?: unknown; tenant?: unknown } {
  return session.state[SUBJECT_KEY] ?? {};
}

function matches(session: StoredSession, selector: EraseSelector, cutoff: number | undefined): boolean {
  const subject = subjectOf(session);
  if (selector.userId !== undefined && subject.userId !== selector.userId) return false;
  if (selector.tenant !== undefined && subject.tenant !== selector.tenant) return false;
  if (cutoff !== undefined && !(Date.parse(session.updatedAt) < cutoff)) return false;
  return true;
}

/** An `onErase` or eraser that threw: nothing was deleted, and the erasure may run again. */
export function erasureFailed(who: string, error: unknown): TrellisError {
  return new TrellisError(TrellisError.is(error) ? error.code : 'Failed', `${who} failed: ${describeError(error)}`, {
    hint: 'No session was deleted; fix the cause and erase again (plugins and erasers that ran already are asked again)',
    kind: 'system',
    cause: error,
  });
}
