import type { PendingApproval } from '../../contract/suspension.js';
import type { SuspensionRecord } from '../durability/suspension-record.js';
import type { SessionParts } from '../turn/turn-envelope.js';
import { asCallerSees, waitingChild } from './delegated-decisions.js';

/**
 * The waiting calls of `record` as `resume` will take them, deep ones included: a call
 * waiting inside a sub-agent is shown as the child session now sees it (its own journal may
 * have re-opened an approved call that a crash cut off for `retry`/`skip`), not as the
 * caller recorded it when the sub-agent first suspended. A child that has nothing waiting
 * (it finished, and the caller's resume will take its reply) keeps the caller's entries.
 */
export async function withDeepPending(
  parts: SessionParts,
  record: SuspensionRecord,
): Promise<readonly PendingApproval[]> {
  if (!record.pending.some((p) => p.path !== undefined)) return record.pending;
  const out: PendingApproval[] = [];
  // Per caller's call: what its child session has waiting, or undefined to keep the caller's entries.
  const asked = new Map<string, readonly PendingApproval[] | undefined>();
  for (const entry of record.pending) {
    const child = waitingChild(parts.id, record, entry);
    const target = child && parts.host.agent?.(child.agent);
    if (!child || !target) {
      out.push(entry);
      continue;
    }
    if (!asked.has(child.parent)) {
      const inside = await target.session(child.sessionId).pending();
      asked.set(child.parent, inside.length > 0 ? inside : undefined);
      out.push(...asCallerSees(inside, child.parent, entry.path![0]!, child.agent));
    }
    if (asked.get(child.parent) === undefined) out.push(entry);
  }
  return out;
}
