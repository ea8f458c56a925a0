import { TrellisError } from '../../errors/trellis-error.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { argumentsHash } from '../../engine/stores/audit-chain.js';
import type { Approver, AuditEntry, AuditOutcome } from '../../engine/stores/audit-log.js';
import type { ApprovalVote, SuspensionRecord } from '../durability/suspension-record.js';
import type { Decision } from '../turn/turn-result.js';
import { policyFor, type CompiledPolicy } from './approval-policy.js';
import { expiredCalls } from './expiry.js';

/** What a resume's decisions come to once the policies had their say. */
export interface ApprovalReview {
  /** Decisions to apply now: the caller's that passed, and rejections of expired calls. */
  readonly decisions: readonly Decision[];
  /** Approvals of calls whose quorum is not reached yet, by call id (all of the record's). */
  readonly approvals: Readonly<Record<string, readonly ApprovalVote[]>>;
  /** Whether `approvals` gained a vote. */
  readonly voted: boolean;
  /** One entry per decision, for the audit log. */
  readonly audit: readonly AuditEntry[];
  /** Set when a decision was refused: nothing of the review may be applied. */
  readonly refused?: TrellisError;
}

/** The inputs of {@link reviewApprovals}. */
export interface ReviewInput {
  readonly sessionId: string;
  readonly record: SuspensionRecord;
  readonly decisions: readonly Decision[];
  readonly approver: Approver | undefined;
  readonly policies: readonly CompiledPolicy[];
  /** The app's tools by name, for their tags. */
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  readonly now: number;
}

/**
 * Applies the approval policies to a resume's decisions. Each decision's approver must
 * satisfy its call's policy (a role allowed, a reason when one is required, a distinct
 * approver for each vote of a quorum); one refused decision refuses the whole resume, as an
 * invalid one does, so nothing is applied by half. A call waiting past its policy's
 * `expiresAfterMs` is rejected whatever was decided, with a message the model reads.
 */
export function reviewApprovals(input: ReviewInput): ApprovalReview {
  const { record, approver, now } = input;
  const at = new Date(now).toISOString();
  const approvals: Record<string, readonly ApprovalVote[]> = { ...record.approvals };
  const decisions: Decision[] = [];
  const audit: AuditEntry[] = [];
  const problems: string[] = [];
  let voted = false;
  const byCall = new Map(input.decisions.map((d) => [d.callId, d]));
  const expired = new Set(expiredCalls(record, input.policies, input.tools, now).map((p) => p.callId));
  for (const pending of record.pending) {
    const decision = byCall.get(pending.callId);
    const policy = policyFor(input.policies, pending.tool, input.tools.get(pending.tool)?.tags ?? []);
    const entry = (d: AuditEntry['decision'], outcome: AuditOutcome, extra: Partial<AuditEntry> = {}): AuditEntry => ({
      at,
      sessionId: input.sessionId,
      turn: record.turnIndex,
      callId: pending.callId,
      tool: pending.tool,
      argumentsHash: argumentsHash(decision?.decision === 'edit' ? decision.args : pending.arguments),
      decision: d,
      outcome,
      approver: d === 'expire' ? null : approverOf(approver),
      ...(policy && { policy: policy.name }),
      ...extra,
    });
    if (policy?.expiresAfterMs !== undefined && expired.has(pending.callId)) {
      const message = `Nobody approved this call of ${pending.tool} within ${formatMs(policy.expiresAfterMs)} (policy '${policy.name}'), so it was rejected and did not run. Tell the user it needs approval and can be asked for again`;
      decisions.push({ callId: pending.callId, decision: 'reject', message });
      audit.push(entry('expire', 'expired'));
      delete approvals[pending.callId];
      continue;
    }
    if (!decision) continue;
    const reason = decision.reason ?? decision.message;
    const problem = policy && refusal(policy, decision, approver, reason, approvals[pending.callId] ?? []);
    if (problem) {
      problems.push(`${pending.callId} (${pending.tool}): ${problem}`);
      audit.push(entry(decision.decision, 'refused', { problem, ...(reason !== undefined && { reason }) }));
      continue;
    }
    const withReason = reason !== undefined ? { reason } : {};
    if (policy && decision.decision === 'approve' && policy.quorum > 1) {
      const votes = [...(approvals[pending.callId] ?? []), { approver: approverOf(approver)!, at, ...withReason }];
      const quorum = { have: votes.length, need: policy.quorum };
      if (votes.length < policy.quorum) {
        approvals[pending.callId] = votes;
        voted = true;
        audit.push(entry('approve', 'vote', { quorum, ...withReason }));
        continue;
      }
      delete approvals[pending.callId];
      decisions.push(decision);
      audit.push(entry('approve', 'approved', { quorum, ...withReason }));
      continue;
    }
    if (decision.decision === 'reject') delete approvals[pending.callId];
    decisions.push(decision);
    audit.push(entry(decision.decision, OUTCOMES[decision.decision], withReason));
  }
  if (problems.length === 0) return { decisions, approvals, voted, audit };
  const refused = new TrellisError(
    'ApprovalRefused',
    `The approval policy refused ${problems.length === 1 ? 'a decision' : `${problems.length} decisions`}; nothing was applied:\n${problems.join('\n')}`,
    {
      hint: 'Decide as someone the policy allows, with a reason where one is required; the host states who decides (approver), never the request body',
      details: { problems, approver: approver?.id ?? null },
    },
  );
  return { decisions: [], approvals: { ...record.approvals }, voted: false, audit, refused };
}

const OUTCOMES: Readonly<Record<Decision['decision'], AuditOutcome>> = {
  approve: 'approved',
  edit: 'edited',
  reject: 'rejected',
  retry: 'retried',
  skip: 'skipped',
};

/** Why `policy` refuses this decision, or undefined when it allows it. */
function refusal(
  policy: CompiledPolicy,
  decision: Decision,
  approver: Approver | undefined,
  reason: string | undefined,
  votes: readonly ApprovalVote[],
): string | undefined {
  if (!approver) return `policy '${policy.name}' needs a verified approver, and the host named none`;
  if (policy.roles && !policy.roles.some((r) => approver.roles?.includes(r))) {
    return `policy '${policy.name}' allows roles ${policy.roles.join(', ')}; '${approver.id}' has ${approver.roles?.length ? approver.roles.join(', ') : 'none'}`;
  }
  if (policy.requireReason && (typeof reason !== 'string' || reason.trim() === ''))
    return `policy '${policy.name}' requires a reason for every decision`;
  if (policy.quorum > 1 && decision.decision === 'edit')
    return `policy '${policy.name}' needs ${policy.quorum} approvers of the same arguments: approve or reject, do not edit`;
  if (policy.quorum > 1 && decision.decision === 'approve' && votes.some((v) => v.approver.id === approver.id)) {
    return `'${approver.id}' approved this call already; policy '${policy.name}' needs ${policy.quorum} distinct approvers`;
  }
  return undefined;
}

/**
 * Checks the host's approver before anything runs.
 *
 * @throws TrellisError `InvalidOptions` for anything but `{ id: non-empty string, roles?: string[] }`.
 */
export function checkApprover(approver: unknown): Approver | undefined {
  if (approver === undefined) return undefined;
  const a = approver as Partial<Approver>;
  const roles = a?.roles;
  if (
    typeof a !== 'object' ||
    a === null ||
    typeof a.id !== 'string' ||
    a.id.length === 0 ||
    a.id.length > 256 ||
    (roles !== undefined && (!Array.isArray(roles) || !roles.every((r) => typeof r === 'string')))
  ) {
    throw new TrellisError(
      'InvalidOptions',
      `resume(): approver must be { id: a non-empty string of at most 256 characters, roles?: string[] }, got ${JSON.stringify(approver)}`,
      {
        hint: 'The host passes who is deciding, e.g. { id: req.user.email, roles: req.user.roles }',
      },
    );
  }
  return approver as Approver;
}

function approverOf(approver: Approver | undefined): Approver | null {
  if (!approver) return null;
  return { id: approver.id, ...(approver.roles !== undefined && { roles: [...approver.roles] }) };
}

function formatMs(ms: number): string {
  if (ms % 3_600_000 === 0) return `${ms / 3_600_000} h`;
  if (ms % 60_000 === 0) return `${ms / 60_000} min`;
  if (ms % 1000 === 0) return `${ms / 1000} s`;
  return `${ms} ms`;
}
