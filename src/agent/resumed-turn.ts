import { ContextLevel } from '../context/context-level.js';
import type { ToolErrorInfo } from '../contract/tool-result.js';
import { TrellisError } from '../errors/trellis-error.js';
import { KERNEL_KEYS } from '../state/kernel-keys.js';
import { executeToolCall, toolMessage } from '../tools/tool-pipeline.js';
import { checkEditedArgs, validateDecisions } from './decisions.js';
import type { SuspensionRecord } from './suspension-record.js';
import { finishReply, inTurnEnvelope, turnEnv, type SessionParts, type TurnMeta } from './turn-envelope.js';
import type { Decision, TurnResult } from './turn-result.js';
import { replyText, TurnRunner, type TurnEnd } from './turn-runner.js';

/** A resume's inputs: the decisions, the host's turn-level context, the caller's signal. */
export interface ResumeTurn {
  readonly decisions: readonly Decision[];
  readonly context: Readonly<Record<string, unknown>> | undefined;
  readonly signal: AbortSignal | undefined;
}

/**
 * Continues a suspended turn: approved (or edited) calls run once, rejected calls never
 * run, calls without a decision keep waiting. The decisions are stored before any call
 * runs, so a second process resuming the same turn gets `SessionBusy`.
 */
export async function runResumedTurn(parts: SessionParts, record: SuspensionRecord, resume: ResumeTurn): Promise<TurnResult> {
  const fresh = validateDecisions(record, resume.decisions, parts.id);
  const env = turnEnv(parts, new ContextLevel({ ...record.turn, ...resume.context, [KERNEL_KEYS.turnInput]: record.input, [KERNEL_KEYS.turnIndex]: record.turnIndex }), resume.signal, record.turnIndex);
  checkEditedArgs(record, fresh, env.view.toolsByName);
  const runner = new TurnRunner(env, parts.agent.limits, record.input, record.instructions, parts.sync.history, record.startedAt);
  runner.restore(record);
  if (fresh.some((d) => d.decision !== 'reject')) await claim(parts, record, fresh, runner);
  const meta: TurnMeta = { turnIndex: record.turnIndex, input: record.input, taskInput: record.input, startedAt: record.startedAt, taskStarted: true, runner };
  return inTurnEnvelope(parts, env, meta, () => runner, async (): Promise<TurnEnd> => {
    const results = { ...record.results };
    let pending = [...record.pending];
    let done = record.done;
    // Decided but still pending: claimed by a resume that stopped before saving the outcome.
    // It may have run, so it is not run again (at most once); the model is told.
    const decided = new Set(record.decisions.map((d) => d.callId));
    for (const call of pending.filter((p) => decided.has(p.callId))) {
      const error: ToolErrorInfo = { code: 'Interrupted', message: 'An approved call was interrupted before its result was saved; it may or may not have run. Check before retrying it', retryable: false };
      results[call.callId] = toolMessage({ ok: false, error });
      runner.toolCalls.push({ callId: call.callId, tool: call.tool, round: record.rounds, ok: false, error, durationMs: 0 });
      pending = pending.filter((p) => p !== call);
    }
    for (const decision of fresh) {
      const call = pending.find((p) => p.callId === decision.callId)!;
      pending = pending.filter((p) => p !== call);
      if (decision.decision === 'reject') {
        const error: ToolErrorInfo = { code: 'Rejected', message: decision.message ?? 'A human rejected this call; do not retry it unchanged', retryable: false };
        results[call.callId] = toolMessage({ ok: false, error });
        runner.toolCalls.push({ callId: call.callId, tool: call.tool, round: record.rounds, ok: false, error, durationMs: 0 });
        continue;
      }
      const args = decision.decision === 'edit' ? JSON.stringify(decision.args) : call.arguments;
      const outcome = await executeToolCall(env, { id: call.callId, name: call.tool, arguments: args }, record.rounds, env.view.toolsByName, { approved: true });
      if (outcome.kind !== 'result') continue;
      results[call.callId] = outcome.content;
      runner.toolCalls.push(outcome.record);
      if (outcome.done && done === undefined) done = replyText(outcome.record.value);
    }
    if (pending.length > 0) {
      const next: SuspensionRecord = { ...record, results, pending, decisions: [...record.decisions, ...fresh], toolCalls: runner.toolCalls, turn: runner.turnValues(), ...(done !== undefined && { done }) };
      return { result: runner.result('suspended', undefined, undefined, pending), append: [], suspension: next };
    }
    runner.pushToolMessages(record.calls, results);
    if (done !== undefined) {
      runner.messages.push({ role: 'assistant', content: done });
      return finishReply(parts, env, runner, runner.end('completed', done));
    }
    return finishReply(parts, env, runner, await runner.loop());
  });
}

/**
 * Stores the decisions before any call runs, so that a second process resuming the
 * same turn at the same time fails the revision check instead of running the calls again.
 */
async function claim(parts: SessionParts, record: SuspensionRecord, fresh: readonly Decision[], runner: TurnRunner): Promise<void> {
  if (!parts.host.store) return;
  const claimed: SuspensionRecord = { ...record, decisions: [...record.decisions, ...fresh] };
  try {
    await parts.sync.checkpoint(record.turnIndex, record.input, { result: runner.result('suspended', undefined, undefined, record.pending), append: [], suspension: claimed }, record.startedAt, parts.state.session.values);
  } catch (error) {
    if (!TrellisError.is(error, 'StaleState')) throw error;
    parts.sync.invalidate();
    throw new TrellisError('SessionBusy', `Session '${parts.id}' was changed elsewhere (another process resumed or continued it); nothing was run here`, {
      hint: 'Reload the session and check whether the calls still wait for a decision',
      cause: error,
    });
  }
}

/** A plain message while calls wait for decisions cancels them; the transcript says so. */
export async function cancelSuspended(parts: SessionParts, record: SuspensionRecord): Promise<void> {
  const note: ToolErrorInfo = { code: 'Cancelled', message: 'Cancelled: the user sent a new message before anyone decided on this call', retryable: false };
  const results = { ...record.results };
  for (const call of record.pending) results[call.callId] = toolMessage({ ok: false, error: note });
  const env = turnEnv(parts, new ContextLevel(), undefined, record.turnIndex);
  const runner = new TurnRunner(env, parts.agent.limits, record.input, record.instructions, parts.sync.history, record.startedAt);
  runner.restore(record);
  runner.pushToolMessages(record.calls, results);
  const end = runner.end('cancelled', undefined, { code: 'Cancelled', message: 'Suspended calls were cancelled by a new message' });
  await parts.sync.checkpoint(record.turnIndex, record.input, end, record.startedAt, parts.state.session.values);
}
