import type { TurnStopper } from '../../engine/context/turn-stopper.js';
import { ContextLevel } from '../../engine/context/context-level.js';
import type { ToolErrorInfo } from '../../contract/tool-result.js';
import { TrellisError } from '../../errors/trellis-error.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import { executeToolCall, toolMessage } from '../../engine/tools/tool-pipeline.js';
import { argumentsFor, reviewJournal, spentDecisions } from './call-journal.js';
import { checkEditedArgs, validateDecisions } from './decisions.js';
import { cancelChildren } from '../delegation/cancel-children.js';
import { childDecision, parentCallOf, waitingInside, withoutCallsInside } from '../delegation/delegated-decisions.js';
import { stashResume } from '../delegation/resume-stash.js';
import type { SuspensionRecord } from './suspension-record.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { canAudit, type Approver, type AuditEntry } from '../../engine/stores/audit-log.js';
import { reviewApprovals } from '../approval/approval-review.js';
import {
  afterHandoffs,
  asEnded,
  finishReply,
  historyOf,
  inTurnEnvelope,
  journalOf,
  turnEnv,
  turnRunner,
  type SessionParts,
  type TurnMeta,
} from '../turn/turn-envelope.js';
import type { Decision, TurnResult } from '../turn/turn-result.js';
import { replyText, runRounds, TurnRunner, type TurnEnd } from '../turn/turn-runner.js';
import type { TurnOutput } from '../turn/turn-output.js';

/** A resume's inputs: the decisions, the host's turn-level context, the caller's signal. */
export interface ResumeTurn {
  readonly decisions: readonly Decision[];
  readonly context: Readonly<Record<string, unknown>> | undefined;
  readonly signal: AbortSignal | TurnStopper | undefined;
  /** The resume's own key (a queued job's), kept in the journal: a retry of the same resume after a crash goes on with the turn. */
  readonly key: string | undefined;
  /** Who decides, as the host vouches for them. */
  readonly approver: Approver | undefined;
  /** Only the expired calls are decided (`session.expirePending()`): no caller's decisions. */
  readonly expireOnly?: boolean;
  /** A typed turn's answer (see `storedOutput`). */
  readonly output?: TurnOutput;
}

/**
 * Continues a suspended turn: approved (or edited) calls run once, rejected calls never
 * run, calls without a decision keep waiting. The decisions are stored before any call
 * runs, so a second process resuming the same turn gets `SessionBusy`; each call is
 * journalled (started, then finished with its result) so that a resume cut off part-way
 * is continued exactly: see {@link reviewJournal}.
 */
export async function runResumedTurn(
  parts: SessionParts,
  stored: SuspensionRecord,
  resume: ResumeTurn,
): Promise<TurnResult> {
  const env = turnEnv(
    parts,
    new ContextLevel({
      ...stored.turn,
      ...resume.context,
      [KERNEL_KEYS.turnInput]: stored.input,
      [KERNEL_KEYS.turnIndex]: stored.turnIndex,
    }),
    resume.signal,
    stored.turnIndex,
    true,
  );
  const { record, carryOver } = reviewJournal(stored, env.view.toolsByName);
  const carried = new Set(carryOver.map((d) => d.callId));
  // A caller's resume hands down every decision again after a crash: the ones this session
  // claimed already are carried over (or reopened as retry/skip) by its journal, not re-applied.
  const handed = parts.delegation
    ? resume.decisions.filter((d) => !stored.decisions.some((c) => c.callId === d.callId))
    : resume.decisions;
  // A decision is consumed once: the calls this resume (by its key) started and a crash cut off
  // wait for a new one. A sub-agent's session is resumed under its caller's call key, the same
  // for every decision handed down: there the claims above decide what was applied.
  const resumeKey = parts.delegation ? undefined : resume.key;
  const spent = spentDecisions(record, resumeKey);
  const asked = spent.size === 0 || !Array.isArray(handed) ? handed : handed.filter((d) => !spent.has(d?.callId));
  const allSpent = asked !== handed && asked.length === 0 && handed.length > 0;
  const requested = (
    resume.expireOnly || allSpent
      ? []
      : asked.length > 0 || !parts.delegation
        ? validateDecisions(record, asked, parts.id)
        : []
  ).filter((d) => !carried.has(d.callId));
  checkEditedArgs(record, requested, env.view.toolsByName);
  // A sub-agent's session takes the decisions its caller's review let through: the policies are applied once, where the human decided.
  const review = parts.delegation
    ? undefined
    : reviewApprovals({
        sessionId: parts.id,
        record,
        decisions: requested,
        approver: resume.approver,
        policies: parts.host.approvals ?? [],
        tools: parts.host.registry.tools,
        now: Date.now(),
      });
  const audit = parts.host.store !== undefined && canAudit(parts.host.store) ? parts.host.store : undefined;
  if (review?.refused) {
    if (audit) await audit.appendAudit(review.audit);
    throw review.refused;
  }
  const fresh = [...carryOver, ...(review ? review.decisions : requested)];
  const runner = turnRunner(parts, env, record.input, record.instructions, historyOf(parts), record.startedAt);
  runner.restore(record);
  runner.output = resume.output;
  let journal: SuspensionRecord = {
    ...record,
    decisions: [...record.decisions, ...fresh],
    ...(review && { approvals: review.approvals }),
  };
  // With an audit log, the decisions and their entries are written in the claim's transaction
  // where the store can (`auditsInCheckpoint`); else the decisions first, then the entries.
  const entries = audit && review && review.audit.length > 0 ? review.audit : undefined;
  const together = entries !== undefined && parts.host.store?.auditsInCheckpoint === true;
  if (fresh.some((d) => d.decision !== 'reject' && d.decision !== 'skip') || entries !== undefined || review?.voted)
    await claim(parts, journal, runner, together ? entries : undefined);
  if (entries !== undefined && !together) await audit!.appendAudit(entries);
  const meta: TurnMeta = {
    turnIndex: record.turnIndex,
    input: record.input,
    taskInput: record.input,
    startedAt: record.startedAt,
    taskStarted: true,
    runner,
    key: record.key,
  };
  const save = (next: SuspensionRecord) =>
    parts.sync.checkpoint(
      record.turnIndex,
      record.input,
      { result: runner.result('suspended', undefined, undefined, next.pending), append: [], suspension: next },
      record.startedAt,
      parts.state.session.values,
      false,
      record.key,
    );
  return inTurnEnvelope(
    parts,
    env,
    meta,
    async (): Promise<TurnEnd> => {
      let done = record.done;
      // Decisions on calls waiting inside a sub-agent, by the call of this turn that runs it.
      const inside = new Map<string, Decision[]>();
      // Decisions carried out (or handed down) so far: a stop withdraws the others.
      const applied = new Set<string>();
      for (const decision of fresh) {
        // Stopped (`session.cancel()`, the caller's signal): no further call starts.
        if (stopped(env)) break;
        applied.add(decision.callId);
        const call = journal.pending.find((p) => p.callId === decision.callId);
        if (!call) continue;
        const parent = parentCallOf(record, call.callId);
        if (parent !== undefined) {
          inside.set(parent, [...(inside.get(parent) ?? []), childDecision(decision, parent)]);
          continue;
        }
        let content: string;
        if (decision.decision === 'reject' || decision.decision === 'skip') {
          const error: ToolErrorInfo =
            decision.decision === 'reject'
              ? {
                  code: 'Rejected',
                  message: decision.message ?? 'A human rejected this call; do not retry it unchanged',
                  retryable: false,
                }
              : {
                  code: 'Skipped',
                  message:
                    decision.message ??
                    'A crash cut this call off mid-run and a human chose to skip it: it may or may not have run',
                  retryable: false,
                };
          content = toolMessage({ ok: false, error });
          runner.finished.addRecord({
            callId: call.callId,
            tool: call.tool,
            round: record.rounds,
            ok: false,
            error,
            durationMs: 0,
          });
        } else {
          // Journal: started, before the call runs. A crash from here on leaves a decidable record.
          if (parts.host.store)
            await save(
              (journal = {
                ...journal,
                started: [...(journal.started ?? []), call.callId],
                ...(resumeKey !== undefined && { startedBy: { ...journal.startedBy, [call.callId]: resumeKey } }),
              }),
            );
          const outcome = await executeToolCall(
            env,
            { id: call.callId, name: call.tool, arguments: argumentsFor(call, decision) },
            record.rounds,
            positionOf(record, call.callId),
            env.view.toolsByName,
            { approved: true },
          );
          if (outcome.kind === 'suspended' && outcome.child) {
            // An approved delegation ran its sub-agent, which now waits for decisions of its own.
            journal = waitingInside(journal, outcome.child, (p) => p === call);
            if (parts.host.store) await save(journal);
            continue;
          }
          if (outcome.kind !== 'result') continue;
          content = outcome.content;
          runner.finished.addRecord(outcome.record);
          if (outcome.done && done === undefined) done = replyText(outcome.record.value);
        }
        // Journal: finished, with the result the model will see.
        journal = {
          ...journal,
          results: { ...journal.results, [call.callId]: content },
          pending: journal.pending.filter((p) => p !== call),
          toolCalls: runner.toolCallRecords(),
          ...(done !== undefined && { done }),
        };
        if (parts.host.store && journal.pending.length > 0) await save(journal);
      }
      for (const [parent, decisions] of inside) {
        if (stopped(env)) {
          for (const d of decisions) applied.delete(`${parent}/${d.callId}`);
          continue;
        }
        // The sub-agent's session journals its own calls: they run once there, so a resume that
        // stopped part-way hands the same decisions down again and nothing runs twice.
        const call = record.calls.find((c) => c.callId === parent)!;
        stashResume(env, parent, decisions);
        const outcome = await executeToolCall(
          env,
          { id: parent, name: call.tool, arguments: call.arguments },
          record.rounds,
          positionOf(record, parent),
          env.view.toolsByName,
          { approved: true },
        );
        const others = withoutCallsInside(journal.pending, parent);
        if (outcome.kind === 'suspended' && outcome.child) {
          journal = waitingInside(journal, outcome.child, (p) => p.callId.startsWith(`${parent}/`));
        } else if (outcome.kind === 'result' && outcome.record.error?.code === 'SessionBusy') {
          // The sub-agent's session could not be had (another writer still holds it): nothing ran
          // there, so its calls keep waiting and a later resume hands the same decisions down.
        } else if (outcome.kind === 'result') {
          runner.finished.addRecord(outcome.record);
          if (outcome.done && done === undefined) done = replyText(outcome.record.value);
          journal = {
            ...journal,
            results: { ...journal.results, [parent]: outcome.content },
            pending: others,
            toolCalls: runner.toolCallRecords(),
            ...(done !== undefined && { done }),
          };
        }
        if (parts.host.store && journal.pending.length > 0) await save(journal);
      }
      // A stop left calls undecided: they wait for a decision again (a claimed one would be carried out by the next resume).
      const withdrawn = fresh.filter((d) => !applied.has(d.callId)).map((d) => d.callId);
      if (withdrawn.length > 0)
        journal = { ...journal, decisions: journal.decisions.filter((d) => !withdrawn.includes(d.callId)) };
      if (journal.pending.length > 0) {
        const next: SuspensionRecord = { ...journal, toolCalls: runner.toolCallRecords(), turn: runner.turnValues() };
        return {
          result: runner.result('suspended', undefined, undefined, journal.pending),
          append: [],
          suspension: next,
        };
      }
      runner.pushToolMessages(record.calls, journal.results);
      const steps = journalOf(env);
      if (steps !== undefined) {
        // Every decided call is done: from here the turn is journalled step by step, starting
        // with where it stands now (written at once, so the last call's result is durable).
        runner.journal = steps;
        await steps.open(
          {
            turn: record.turnIndex,
            key: record.key ?? resume.key ?? '',
            ...(resume.key !== undefined && { resumedBy: resume.key }),
            agent: parts.agent.spec.name,
            input: record.input,
            taskInput: record.input,
            startedAt: record.startedAt,
            instructions: record.instructions,
            rounds: runner.rounds,
            messages: runner.messages,
            toolCalls: runner.toolCallRecords(),
            usage: runner.usage,
            roundUsage: runner.roundUsage,
            handedOver: runner.handedOver,
            ...(done !== undefined && { done }),
          },
          true,
        );
      }
      if (done !== undefined) {
        runner.messages.push({ role: 'assistant', content: done });
        return finishReply(parts, env, runner, runner.end('completed', done));
      }
      const after = await runRounds(env, runner).then((end) => afterHandoffs(parts, env, runner, end));
      meta.runner = after.runner;
      return finishReply(after.parts, after.env, after.runner, after.end);
    },
    asEnded,
  );
}

/**
 * Stores the decisions before any call runs, so that a second process resuming the
 * same turn at the same time fails the revision check instead of running the calls again.
 */
async function claim(
  parts: SessionParts,
  claimed: SuspensionRecord,
  runner: TurnRunner,
  audit: readonly AuditEntry[] | undefined,
): Promise<void> {
  if (!parts.host.store) return;
  const record = claimed;
  try {
    await parts.sync.checkpoint(
      record.turnIndex,
      record.input,
      { result: runner.result('suspended', undefined, undefined, record.pending), append: [], suspension: claimed },
      record.startedAt,
      parts.state.session.values,
      false,
      record.key,
      audit,
    );
  } catch (error) {
    if (!TrellisError.is(error, 'StaleState')) throw error;
    parts.sync.invalidate();
    throw new TrellisError(
      'SessionBusy',
      `Session '${parts.id}' was changed elsewhere (another process resumed or continued it); nothing was run here`,
      {
        hint: 'Reload the session and check whether the calls still wait for a decision',
        cause: error,
      },
    );
  }
}

/** Why waiting calls were cancelled: a new message came, or the host withdrew them (`cancelPending`, which a cancelled caller also uses on its sub-agents). */
export type CancelCause = 'message' | 'withdrawn';

const CANCEL_NOTES: Readonly<Record<CancelCause, { readonly call: string; readonly turn: string }>> = {
  message: {
    call: 'Cancelled: the user sent a new message before anyone decided on this call',
    turn: 'Suspended calls were cancelled by a new message',
  },
  withdrawn: {
    call: 'Cancelled: the waiting calls were withdrawn before anyone decided on this call',
    turn: 'Suspended calls were withdrawn',
  },
};

/** A plain message (or `cancelPending`) while calls wait for decisions cancels them; the transcript says which. */
export async function cancelSuspended(
  parts: SessionParts,
  record: SuspensionRecord,
  cause: CancelCause,
): Promise<void> {
  await cancelChildren(parts, record);
  const note: ToolErrorInfo = { code: 'Cancelled', message: CANCEL_NOTES[cause].call, retryable: false };
  const results = { ...record.results };
  for (const call of record.pending)
    results[parentCallOf(record, call.callId) ?? call.callId] = toolMessage({ ok: false, error: note });
  const env = turnEnv(parts, new ContextLevel(), undefined, record.turnIndex);
  const runner = turnRunner(parts, env, record.input, record.instructions, parts.sync.history, record.startedAt);
  runner.restore(record);
  runner.pushToolMessages(record.calls, results);
  const end = runner.end('cancelled', undefined, { code: 'Cancelled', message: CANCEL_NOTES[cause].turn });
  await parts.sync.checkpoint(
    record.turnIndex,
    record.input,
    end,
    record.startedAt,
    parts.state.session.values,
    false,
    record.key,
  );
}

/** Whether the turn was told to stop: `session.cancel()`, the caller's signal, its deadline. */
function stopped(env: TurnEnv): boolean {
  return env.stopper !== undefined ? env.stopper.signal.aborted : env.site.signal.aborted;
}

/** A parked call's place in the round that asked for it: its index among the record's calls. */
function positionOf(record: SuspensionRecord, callId: string): number {
  return record.calls.findIndex((c) => c.callId === callId);
}
