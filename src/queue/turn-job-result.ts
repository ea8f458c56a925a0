import type { TurnResult } from '../../index.js';

/**
 * What a queued turn came to, as the enqueuing instance receives it. `result` is the
 * `TurnResult` of the worker's `send`/`resume` as JSON. `recovered` is true when a worker
 * died after the turn's checkpoint but before the job was marked done: the turn was not
 * run again, and `result` is rebuilt from the stored turn record (its `toolCalls` are then
 * empty: the record keeps only their count).
 */
export interface TurnJobResult {
  readonly jobId: string;
  readonly sessionId: string;
  readonly kind: 'send' | 'resume';
  readonly result: TurnResult;
  readonly recovered: boolean;
  /** The id of the worker that finished the job. */
  readonly worker: string;
}

/** What a worker publishes on a job's result channel. */
export type PublishedOutcome = { readonly ok: true; readonly value: TurnJobResult } | { readonly ok: false; readonly error: { readonly code: string; readonly message: string } };
