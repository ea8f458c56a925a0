import type { PendingApproval, SessionStore, TurnResult, Usage } from '../../../index.js';
import { addUsage } from '../../../plugin.js';

/**
 * What a queued turn came to, as the enqueuing instance receives it. `result` is the
 * `TurnResult` of the worker's `send`/`resume` as JSON. `recovered` is true when a worker
 * died after the turn's checkpoint but before the job was marked done: the turn was not
 * run again, and `result` is rebuilt from the stored turn record (its `toolCalls` are then
 * empty: the record keeps only their count). It is also true when the enqueuing instance read
 * the turn from the session store itself, Redis having lost the job (`worker` is then empty).
 */
export interface TurnJobResult {
  readonly jobId: string;
  readonly sessionId: string;
  readonly kind: 'send' | 'resume';
  readonly result: TurnResult;
  readonly recovered: boolean;
  /** The id of the worker that finished the job; empty when the result was read from the session store. */
  readonly worker: string;
}

/**
 * What a queued `cancelPending` came to. `recovered` is true when an earlier attempt
 * cancelled the turn and its worker died before the job was marked done: the session no
 * longer waited, and its last turn is the cancelled one.
 */
export interface CancelJobResult {
  readonly jobId: string;
  readonly sessionId: string;
  readonly kind: 'cancel';
  /** Whether a suspended turn was waiting, and is now cancelled. */
  readonly cancelled: boolean;
  readonly recovered: boolean;
  /** The id of the worker that finished the job. */
  readonly worker: string;
}

/** What any queued job comes to. */
export type JobResult = TurnJobResult | CancelJobResult;

/** What a worker publishes on a job's result channel. */
export type PublishedOutcome =
  | { readonly ok: true; readonly value: JobResult }
  | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };

type StoredTurn = NonNullable<Awaited<ReturnType<SessionStore['load']>>>['turns'][number];

/**
 * A stored turn record as the `TurnResult` its job reports (tool calls are not stored per turn):
 * what a worker answers for a turn that landed before a crash, and what a caller reads from the
 * store when Redis lost the job.
 */
export function turnResultOf(record: StoredTurn, pending: readonly PendingApproval[]): TurnResult {
  const usage = Object.values(record.usage).reduce<Usage>((sum, u) => addUsage(sum, u), {
    inputTokens: 0,
    outputTokens: 0,
    totalTokens: 0,
  });
  return {
    status: record.status,
    reply: record.reply,
    rounds: record.rounds,
    toolCalls: [],
    usage: { ...usage, byModel: record.usage },
    suspended: record.status === 'suspended' ? pending : undefined,
    error: record.error,
    ...(record.output !== undefined && { output: record.output }),
  };
}
