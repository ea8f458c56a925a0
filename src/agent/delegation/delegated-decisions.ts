import type { PendingApproval } from '../../contract/suspension.js';
import type { ChildSuspension } from '../../contract/delegation.js';
import type { SuspensionRecord } from '../suspension-record.js';
import type { Decision } from '../turn-result.js';

/**
 * The call of the stopped round whose sub-agent holds this waiting call, if any: a call
 * waiting inside a sub-agent is named `<that call's id>/<its id there>`.
 */
export function parentCallOf(record: SuspensionRecord, callId: string): string | undefined {
  if (!callId.includes('/')) return undefined;
  return record.calls.find((c) => callId.startsWith(`${c.callId}/`))?.callId;
}

/** The decision as the sub-agent's session names the call. */
export function childDecision(decision: Decision, parent: string): Decision {
  return { ...decision, callId: decision.callId.slice(parent.length + 1) };
}

/** The waiting calls without those inside the sub-agent that `parent` runs. */
export function withoutCallsInside(pending: readonly PendingApproval[], parent: string): PendingApproval[] {
  return pending.filter((p) => !p.callId.startsWith(`${parent}/`));
}

/**
 * The journal once the sub-agent behind `parent` (or the call `replaced`) waits again: its
 * calls are the sub-agent's waiting calls now, and a decision recorded for one of them
 * earlier is dropped, because the sub-agent asks anew (e.g. `retry`/`skip` after a crash).
 */
export function waitingInside(journal: SuspensionRecord, child: ChildSuspension, replaced: (p: PendingApproval) => boolean): SuspensionRecord {
  const waiting = new Set(child.pending.map((p) => p.callId));
  return {
    ...journal,
    pending: [...journal.pending.filter((p) => !replaced(p)), ...child.pending],
    decisions: journal.decisions.filter((d) => !waiting.has(d.callId)),
  };
}
