import type { PendingApproval } from '../../contract/suspension.js';
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
