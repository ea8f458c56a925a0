import { TrellisError } from '../errors/trellis-error.js';
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

/** What a plugin's `onErase(request)` is told: the sessions being erased and why. */
export interface EraseRequest {
  readonly sessionIds: readonly string[];
  readonly selector: EraseSelector;
}

/** What `app.erase` did. */
export interface EraseReport {
  readonly sessions: readonly string[];
  /** Plugins whose `onErase` ran, by name. */
  readonly plugins: readonly string[];
}

/** Where a stored session says whom it is about: `{ userId?, tenant? }`, from the host's `app.user_id` / `app.tenant` session context. */
const SUBJECT_KEY = 'trellis.subject';

/** Checks a selector; at least one criterion, each the right type. */
export function checkSelector(selector: EraseSelector): { cutoff: number | undefined } {
  const given = ['sessionId', 'userId', 'tenant', 'olderThan'].filter((k) => (selector as Record<string, unknown>)[k] !== undefined);
  const bad = (why: string) => new TrellisError('InvalidOptions', `erase(): ${why}`, { hint: "Pass { userId: 'u-42' }, { sessionId }, { tenant } or { olderThan: new Date(Date.now() - 30 * 864e5) }" });
  if (given.length === 0) throw bad('name what to erase: sessionId, userId, tenant or olderThan (erasing everything is not a selector)');
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

/** The stored sessions the selector picks (loaded one by one: a store needs no index for this). */
export async function sessionsToErase(store: SessionStore, selector: EraseSelector): Promise<string[]> {
  const { cutoff } = checkSelector(selector);
  const candidates = selector.sessionId !== undefined ? [selector.sessionId] : (await store.list()).map((s) => s.id);
  const picked: string[] = [];
  for (const id of candidates) {
    const session = await store.load(id);
    if (session && matches(session, selector, cutoff)) picked.push(id);
  }
  return picked;
}

function matches(session: StoredSession, selector: EraseSelector, cutoff: number | undefined): boolean {
  const subject = (session.state[SUBJECT_KEY] ?? {}) as { userId?: unknown; tenant?: unknown };
  if (selector.userId !== undefined && subject.userId !== selector.userId) return false;
  if (selector.tenant !== undefined && subject.tenant !== selector.tenant) return false;
  if (cutoff !== undefined && !(Date.parse(session.updatedAt) < cutoff)) return false;
  return true;
}
