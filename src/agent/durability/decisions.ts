import { TrellisError } from '../../errors/trellis-error.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { formatFieldErrors } from '../../engine/validation/validate-dto.js';
import type { SuspensionRecord } from './suspension-record.js';
import type { Decision } from '../turn/turn-result.js';

const KINDS = ['approve', 'reject', 'edit', 'retry', 'skip'] as const;
/** What a gate's ticket allows when it names nothing: `retry`/`skip` are only for calls cut off by a crash. */
const DEFAULT_ALLOWED = ['approve', 'reject', 'edit'] as const;

/**
 * Checks decisions against a suspended turn and returns the ones not applied yet. A
 * decision on a call that was already decided is ignored, so applying one twice
 * changes nothing; anything malformed is refused before anything runs.
 */
export function validateDecisions(
  record: SuspensionRecord,
  decisions: readonly Decision[],
  sessionId: string,
): Decision[] {
  if (!Array.isArray(decisions) || decisions.length === 0) {
    throw invalid(`resume() needs decisions for session '${sessionId}'`, record);
  }
  const decided = new Set(record.decisions.map((d) => d.callId));
  const fresh: Decision[] = [];
  const seen = new Set<string>();
  for (const decision of decisions) {
    if (typeof decision?.callId !== 'string' || !KINDS.includes(decision.decision)) {
      throw invalid(
        `A decision must be { callId, decision: 'approve' | 'reject' | 'edit' | 'retry' | 'skip' }, got ${JSON.stringify(decision)}`,
        record,
      );
    }
    if (decided.has(decision.callId) || seen.has(decision.callId)) continue;
    const pending = record.pending.find((p) => p.callId === decision.callId);
    if (!pending)
      throw invalid(`Call '${decision.callId}' is not waiting for a decision in session '${sessionId}'`, record);
    const allowed: readonly string[] = pending.ticket.allowedDecisions ?? DEFAULT_ALLOWED;
    if (!allowed.includes(decision.decision)) {
      throw invalid(
        `Call '${decision.callId}' (${pending.tool}) does not allow '${decision.decision}'; allowed: ${allowed.join(', ')}`,
        record,
      );
    }
    if (decision.decision === 'edit' && (typeof decision.args !== 'object' || decision.args === null)) {
      throw invalid(
        `An 'edit' decision for '${decision.callId}' needs args: the arguments object to run the call with`,
        record,
      );
    }
    seen.add(decision.callId);
    fresh.push(decision);
  }
  return fresh;
}

/**
 * Edited arguments are checked against the tool's input DTO before anything is decided:
 * a reviewer's typo is refused (and can be fixed) instead of using up the decision.
 */
export function checkEditedArgs(
  record: SuspensionRecord,
  decisions: readonly Decision[],
  tools: ReadonlyMap<string, RegisteredTool>,
): void {
  for (const decision of decisions) {
    if (decision.decision !== 'edit') continue;
    const pending = record.pending.find((p) => p.callId === decision.callId)!;
    const tool = tools.get(pending.tool);
    if (!tool) continue;
    const checked = tool.validateInput(decision.args);
    if (!checked.ok) {
      throw invalid(
        `The edited arguments for '${decision.callId}' (${pending.tool}) are invalid:\n${formatFieldErrors(checked.errors)}`,
        record,
      );
    }
  }
}

function invalid(message: string, record: SuspensionRecord): TrellisError {
  const waiting = record.pending.map((p) => `${p.callId} (${p.tool})`).join(', ') || 'none';
  return new TrellisError('InvalidDecision', message, {
    hint: `Calls waiting: ${waiting}`,
    details: { pending: record.pending.map((p) => p.callId) },
  });
}
