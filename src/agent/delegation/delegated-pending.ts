import type { PendingApproval } from '../../contract/suspension.js';
import type { SuspensionRecord } from '../suspension-record.js';
import type { SessionParts } from '../turn-envelope.js';
import { childSessionId } from './agent-tool.js';
import { parentCallOf } from './delegated-decisions.js';

/**
 * The waiting calls of `record` as `resume` will take them, deep ones included: a call
 * waiting inside a sub-agent is shown as the child session now sees it (its own journal may
 * have re-opened an approved call that a crash cut off for `retry`/`skip`), not as the
 * caller recorded it when the sub-agent first suspended. A child that has nothing waiting
 * (it finished, and the caller's resume will take its reply) keeps the caller's entries.
 */
export async function withDeepPending(parts: SessionParts, record: SuspensionRecord, pending: readonly PendingApproval[]): Promise<readonly PendingApproval[]> {
  if (!pending.some((p) => p.path !== undefined)) return pending;
  const out: PendingApproval[] = [];
  const asked = new Map<string, readonly PendingApproval[] | undefined>();
  for (const entry of pending) {
    const parent = parentCallOf(record, entry.callId);
    const agent = entry.path?.[1];
    const target = agent === undefined ? undefined : parts.host.agent?.(agent);
    if (!parent || !agent || !target) {
      out.push(entry);
      continue;
    }
    if (!asked.has(parent)) {
      const inside = await target.session(childSessionId(parts.id, record.turnIndex, parent, agent)).pending();
      asked.set(parent, inside.length > 0 ? inside : undefined);
      for (const p of inside) out.push({ ...p, callId: `${parent}/${p.callId}`, path: [entry.path![0]!, ...(p.path ?? [agent])] });
    }
    if (asked.get(parent) === undefined) out.push(entry);
  }
  return out;
}
