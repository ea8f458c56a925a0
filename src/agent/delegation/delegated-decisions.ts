import type { PendingApproval } from '../../contract/suspension.js';
import type { ChildSuspension } from '../../contract/delegation.js';
import type { SuspensionRecord } from '../durability/suspension-record.js';
import type { Decision } from '../turn/turn-result.js';

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
export function waitingInside(
  journal: SuspensionRecord,
  child: ChildSuspension,
  replaced: (p: PendingApproval) => boolean,
): SuspensionRecord {
  const waiting = new Set(child.pending.map((p) => p.callId));
  return {
    ...journal,
    pending: [...journal.pending.filter((p) => !replaced(p)), ...child.pending],
    decisions: journal.decisions.filter((d) => !waiting.has(d.callId)),
  };
}

/** The child session of `agent` that the call `callId` of turn `turnIndex` of `sessionId` ran. */
export function childSessionId(sessionId: string, turnIndex: number, callId: string, agent: string): string {
  return `${sessionId}>${agent}:${turnIndex}:${callId}`;
}

/** Where a waiting call of `record` waits when it is inside a sub-agent: the caller's call, the sub-agent, its session. */
export interface WaitingChild {
  readonly parent: string;
  readonly agent: string;
  readonly sessionId: string;
}

/**
 * The child session holding `waiting`, or `undefined` for a call waiting in this session:
 * a call inside a sub-agent is named `<call>/<its id there>` and its `path` names the sub-agent.
 */
export function waitingChild(
  sessionId: string,
  record: SuspensionRecord,
  waiting: PendingApproval,
): WaitingChild | undefined {
  const parent = parentCallOf(record, waiting.callId);
  const agent = waiting.path?.[1];
  if (!parent || !agent) return undefined;
  return { parent, agent, sessionId: childSessionId(sessionId, record.turnIndex, parent, agent) };
}

/** A sub-agent's waiting calls as its caller names them: `<call>/<id>`, with the path from `self` down. */
export function asCallerSees(
  pending: readonly PendingApproval[],
  parent: string,
  self: string,
  agent: string,
): PendingApproval[] {
  return pending.map((p) => ({ ...p, callId: `${parent}/${p.callId}`, path: [self, ...(p.path ?? [agent])] }));
}
