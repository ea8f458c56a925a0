import type { RegisteredTool } from '../../contract/plugin-member.js';
import type { PendingApproval } from '../../contract/suspension.js';
import type { SuspensionRecord } from '../durability/suspension-record.js';
import { policyFor, type CompiledPolicy } from './approval-policy.js';

/** The waiting calls of `record` (not those a crash cut off: only a human knows whether they ran) whose policy's `expiresAfterMs` has run out at `now`. */
export function expiredCalls(
  record: SuspensionRecord,
  policies: readonly CompiledPolicy[],
  tools: ReadonlyMap<string, RegisteredTool>,
  now: number,
): PendingApproval[] {
  if (policies.length === 0) return [];
  const since = Date.parse(record.suspendedAt ?? record.startedAt);
  return record.pending.filter((p) => {
    if (p.ticket.data?.['interrupted'] === true) return false;
    const policy = policyFor(policies, p.tool, tools.get(p.tool)?.tags ?? []);
    return policy?.expiresAfterMs !== undefined && now - since > policy.expiresAfterMs;
  });
}
