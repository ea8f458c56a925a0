import { TrellisError } from '../../errors/trellis-error.js';
import type { ChatMessage, Usage } from '../../contract/model-provider.js';
import type { Approver } from '../../engine/stores/audit-log.js';
import type { Decision, PendingApproval, ToolCallRecord } from '../turn/turn-result.js';

export const SUSPENSION_VERSION = 1;

/**
 * Everything needed to continue a suspended turn, in this process or another: a plain,
 * versioned object stored with the session's checkpoint.
 */
export interface SuspensionRecord {
  readonly version: typeof SUSPENSION_VERSION;
  readonly turnIndex: number;
  readonly input: string;
  readonly startedAt: string;
  /** The system prompt after `planning.started`. */
  readonly instructions: string;
  /** Model calls made so far. */
  readonly rounds: number;
  /** The turn's messages so far, ending with the assistant message that asked for the calls. */
  readonly messages: readonly ChatMessage[];
  /** The tool calls of that assistant message, in order. */
  readonly calls: readonly { readonly callId: string; readonly tool: string; readonly arguments: string }[];
  /** Tool-message contents of the calls that are finished, by call id. */
  readonly results: Readonly<Record<string, string>>;
  readonly pending: readonly PendingApproval[];
  readonly decisions: readonly Decision[];
  readonly toolCalls: readonly ToolCallRecord[];
  readonly usage: Readonly<Record<string, Usage>>;
  /**
   * Turn-level context when the turn stopped (context messages, overrides, `<tool>.result`),
   * restored on resume. Optional: records written before it was added resume without it.
   */
  readonly turn?: Readonly<Record<string, unknown>>;
  /** The reply a call of the stopped round gave with `done(...)`; the turn ends with it once the rest is decided. */
  readonly done?: string;
  /**
   * The call journal: ids of decided calls whose run started. A call finished is no longer
   * pending and has its result in `results`; one claimed but not started never ran; one
   * started without a result was cut off mid-run. Optional: older records have none.
   */
  readonly started?: readonly string[];
  /**
   * The key of the resume (`ResumeOptions.key`, a queued job's id) under whose decision each
   * started call started, by call id. A call cut off mid-run is reopened as `retry`/`skip`
   * with that key as its ticket's `spentBy`: the decision is consumed, and the same resume
   * tried again after a crash does not apply it a second time. Optional: older records have none.
   */
  readonly startedBy?: Readonly<Record<string, string>>;
  /** Model usage of agents that handed the turn over before the one it stopped in, by agent. Optional. */
  readonly handedOver?: Readonly<Record<string, Usage>>;
  /** The turn's key (`SendOptions.key`, or one made for it). Optional: older records have none. */
  readonly key?: string;
  /** When the calls were parked (ISO): approval policies' expiry counts from it. Optional: older records count from `startedAt`. */
  readonly suspendedAt?: string;
  /** Model usage by round, for `usage.byPlugin`. Optional: older records attribute the rounds before the suspension as unattributed. */
  readonly roundUsage?: Readonly<Record<number, Usage>>;
  /** Wall time of each round's model call, for `usage.byPlugin`'s `modelMs`. Optional: older records have none. */
  readonly roundMs?: Readonly<Record<number, number>>;
  /** Hook and transform time by plugin so far, for `usage.byPlugin`'s `hookMs` and per-turn budgets. Optional: older records have none. */
  readonly hookMs?: Readonly<Record<string, number>>;
  /** Approvals given so far to calls whose policy needs a quorum, by call id. Optional. */
  readonly approvals?: Readonly<Record<string, readonly ApprovalVote[]>>;
}

/** One approver's approval of a call that needs several. */
export interface ApprovalVote {
  readonly approver: Approver;
  readonly at: string;
  readonly reason?: string;
}

/**
 * The messages of a suspended turn so far, as a reader of the conversation sees them: the
 * user's message, the model's replies up to the one that asked for the waiting calls, and
 * the results of that round's calls that finished. They are committed to the transcript
 * with the rest of the turn when it ends. A stored value that is not a readable record
 * (nothing suspended, or damaged: `resume` reports that) gives none.
 */
export function suspendedTurnMessages(suspension: unknown): ChatMessage[] {
  if (typeof suspension !== 'object' || suspension === null) return [];
  const { messages, calls, results } = suspension as Partial<SuspensionRecord>;
  if (!Array.isArray(messages)) return [];
  const finished =
    Array.isArray(calls) && typeof results === 'object' && results !== null
      ? calls.filter((c) => typeof results[c?.callId] === 'string')
      : [];
  return [
    ...messages,
    ...finished.map((c): ChatMessage => ({
      role: 'tool',
      toolCallId: c.callId,
      name: c.tool,
      content: results![c.callId]!,
    })),
  ];
}

/**
 * Reads a stored suspension (`StoredSession.suspension`) before anything runs from it,
 * failing closed on anything odd.
 *
 * @returns `undefined` when nothing is suspended (`null` or `undefined`), else the record.
 * @throws TrellisError `InvalidCheckpoint` (kind `system`) naming the session when the record
 *   is not one this Trellis wrote (wrong shape or schema version); nothing has run then.
 */
export function parseSuspension(value: unknown, sessionId: string): SuspensionRecord | undefined {
  if (value === null || value === undefined) return undefined;
  const fail = (why: string) =>
    new TrellisError(
      'InvalidCheckpoint',
      `The suspended turn stored for session '${sessionId}' is unusable: ${why}; nothing was run`,
      {
        hint: 'Send a new message to start over (the suspended calls are then cancelled), or restore the store from a backup',
        kind: 'system',
        details: { sessionId },
      },
    );
  if (typeof value !== 'object') throw fail('it is not an object');
  const record = value as Partial<SuspensionRecord>;
  if (record.version !== SUSPENSION_VERSION)
    throw fail(`its schema version is ${String(record.version)}, this Trellis reads ${SUSPENSION_VERSION}`);
  const arrays = ['messages', 'calls', 'pending', 'decisions', 'toolCalls'] as const;
  for (const key of arrays) if (!Array.isArray(record[key])) throw fail(`'${key}' is not a list`);
  if (typeof record.turnIndex !== 'number' || typeof record.rounds !== 'number')
    throw fail('turnIndex or rounds is not a number');
  if (typeof record.input !== 'string' || typeof record.instructions !== 'string')
    throw fail('input or instructions is not text');
  if (typeof record.results !== 'object' || record.results === null) throw fail("'results' is not an object");
  if (
    record.turn !== undefined &&
    (typeof record.turn !== 'object' || record.turn === null || Array.isArray(record.turn))
  )
    throw fail("'turn' is not an object");
  if (record.done !== undefined && typeof record.done !== 'string') throw fail("'done' is not text");
  if (record.key !== undefined && typeof record.key !== 'string') throw fail("'key' is not text");
  if (
    record.suspendedAt !== undefined &&
    (typeof record.suspendedAt !== 'string' || Number.isNaN(Date.parse(record.suspendedAt)))
  )
    throw fail("'suspendedAt' is not a time");
  if (
    record.roundUsage !== undefined &&
    (typeof record.roundUsage !== 'object' || record.roundUsage === null || Array.isArray(record.roundUsage))
  )
    throw fail("'roundUsage' is not an object");
  for (const key of ['roundMs', 'hookMs'] as const)
    if (record[key] !== undefined && !numbersByKey(record[key])) throw fail(`'${key}' is not a map of numbers`);
  if (record.approvals !== undefined && !validVotes(record.approvals))
    throw fail("'approvals' is not a map of call ids to approvals");
  if (
    record.started !== undefined &&
    (!Array.isArray(record.started) || !record.started.every((id) => typeof id === 'string'))
  )
    throw fail("'started' is not a list of call ids");
  if (record.startedBy !== undefined && !stringsByKey(record.startedBy))
    throw fail("'startedBy' is not a map of call ids to resume keys");
  for (const pending of record.pending!) {
    if (
      typeof pending?.callId !== 'string' ||
      typeof pending.tool !== 'string' ||
      typeof pending.arguments !== 'string' ||
      typeof pending.ticket?.message !== 'string'
    ) {
      throw fail('a pending call is malformed');
    }
  }
  return record as SuspensionRecord;
}

function validVotes(value: unknown): boolean {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return false;
  return Object.values(value).every(
    (votes) =>
      Array.isArray(votes) && votes.every((v) => typeof v?.approver?.id === 'string' && typeof v.at === 'string'),
  );
}

/**
 * The turn level's values worth carrying over a suspension: set ones, without the
 * per-turn kernel inputs and without host context (`app.*`), which the host states again
 * with the resume and is never read back from the store.
 */
export function carriedTurnValues(
  values: Readonly<Record<string, unknown>>,
  skip: readonly string[],
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values))
    if (value !== undefined && !skip.includes(key) && !isHostKey(key)) out[key] = value;
  return out;
}

/** Host context keys: the host's statement about the current request. */
export function isHostKey(key: string): boolean {
  return key.startsWith('app.');
}

function stringsByKey(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((key) => typeof key === 'string')
  );
}

function numbersByKey(value: unknown): boolean {
  return (
    typeof value === 'object' &&
    value !== null &&
    !Array.isArray(value) &&
    Object.values(value).every((n) => typeof n === 'number' && Number.isFinite(n))
  );
}
