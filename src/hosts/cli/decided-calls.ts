import type { Decision } from '../../../index.js';
import type { StoredSession } from '../../../stores.js';
import type { SuspensionRecord } from '../../../host.js';

/** The decisions `trellis resume` was given, sorted by what is still to do about them. */
export interface SortedDecisions {
  /** Calls that wait for a decision now: these go to `session.resume`. */
  readonly toApply: readonly Decision[];
  /** Calls decided before (in an earlier resume, or a turn that has ended): nothing to do. */
  readonly alreadyDecided: readonly string[];
  /** Call ids this session never had. */
  readonly unknown: readonly string[];
}

/**
 * Sorts decisions against a stored session. A decision applied twice changes nothing, so
 * a call decided before is reported, not refused; an id the session never saw is refused.
 */
export function sortDecisions(
  decisions: readonly Decision[],
  stored: StoredSession,
  record: SuspensionRecord | undefined,
): SortedDecisions {
  const decided = new Set(record?.decisions.map((d) => d.callId) ?? []);
  const waiting = new Set((record?.pending ?? []).map((p) => p.callId).filter((id) => !decided.has(id)));
  const seen = new Set<string>(decided);
  for (const message of stored.transcript) {
    if (message.toolCallId) seen.add(message.toolCallId);
    for (const call of message.toolCalls ?? []) seen.add(call.id);
  }
  const toApply: Decision[] = [];
  const alreadyDecided: string[] = [];
  const unknown: string[] = [];
  for (const decision of decisions) {
    if (waiting.has(decision.callId)) toApply.push(decision);
    else if (seen.has(decision.callId)) alreadyDecided.push(decision.callId);
    else unknown.push(decision.callId);
  }
  return { toApply, alreadyDecided, unknown };
}
