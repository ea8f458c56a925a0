import { interruptedTicket, type PendingApproval } from '../../contract/suspension.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import type { SuspensionRecord } from './suspension-record.js';
import type { Decision } from '../turn/turn-result.js';

/** What the journal of a stored suspension says about calls an earlier resume claimed. */
export interface JournalReview {
  /** The record with those calls made decidable again where they must be. */
  readonly record: SuspensionRecord;
  /** Claimed decisions to carry out now: calls that never started, or idempotent ones cut off. */
  readonly carryOver: readonly Decision[];
}

/**
 * Reads the call journal after a resume that stopped part-way (a crash, a kill, a failed
 * save). A claimed call that never started is carried out now with its decision: it never
 * ran, so it runs once. A call that started and left no result was cut off mid-run: an
 * idempotent tool is run again; any other becomes a pending `retry` / `skip` decision,
 * because only a human can say whether its effect happened — and the decision it ran under is
 * consumed (the ticket's `spentBy` names the resume that gave it; see {@link spentDecisions}).
 * Finished calls are not pending any more and keep their stored results.
 */
export function reviewJournal(
  record: SuspensionRecord,
  tools: ReadonlyMap<string, Pick<RegisteredTool, 'onCrash'>>,
): JournalReview {
  const claimed = new Map(record.decisions.map((d) => [d.callId, d] as const));
  const started = new Set(record.started ?? []);
  const carryOver: Decision[] = [];
  const reopened = new Set<string>();
  const pending: PendingApproval[] = [];
  for (const call of record.pending) {
    const decision = claimed.get(call.callId);
    if (!decision) {
      pending.push(call);
      continue;
    }
    reopened.add(call.callId);
    if (
      !started.has(call.callId) ||
      decision.decision === 'reject' ||
      decision.decision === 'skip' ||
      tools.get(call.tool)?.onCrash === 'retry'
    ) {
      carryOver.push(decision);
      pending.push(call);
      continue;
    }
    const args = decision.decision === 'edit' ? decision.args : call.ticket.data?.['args'];
    pending.push({
      ...call,
      ticket: interruptedTicket(call.tool, true, call.ticket.message, args, record.startedBy?.[call.callId]),
    });
  }
  if (reopened.size === 0) return { record, carryOver };
  const startedBy =
    record.startedBy === undefined
      ? undefined
      : Object.fromEntries(Object.entries(record.startedBy).filter(([id]) => !reopened.has(id)));
  return {
    record: {
      ...record,
      pending,
      decisions: record.decisions.filter((d) => !reopened.has(d.callId)),
      started: (record.started ?? []).filter((id) => !reopened.has(id)),
      ...(startedBy !== undefined && { startedBy }),
    },
    carryOver,
  };
}

/** The arguments a decided call runs with: edited ones, a retried call's original ones, or the model's. */
export function argumentsFor(call: PendingApproval, decision: Decision): string {
  if (decision.decision === 'edit') return JSON.stringify(decision.args);
  const kept = call.ticket.data?.['args'];
  if (decision.decision === 'retry' && kept !== undefined) return JSON.stringify(kept);
  return call.arguments;
}

/**
 * The calls a resume keyed `key` already decided and started, which a crash then cut off:
 * their decision is consumed, so the same resume tried again (a queued job run again after its
 * worker died) asks for a new decision instead of running them again under the old one.
 */
export function spentDecisions(record: SuspensionRecord, key: string | undefined): ReadonlySet<string> {
  if (key === undefined) return new Set();
  return new Set(record.pending.filter((p) => p.ticket.data?.['spentBy'] === key).map((p) => p.callId));
}
