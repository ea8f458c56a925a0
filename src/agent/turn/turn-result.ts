import type { PendingApproval } from '../../contract/suspension.js';
import type { Usage } from '../../contract/model-provider.js';
import type { AttributedUsage } from './usage-attribution.js';
import type { ToolCallRecord } from '../../contract/tool-result.js';

export type { ToolCallRecord } from '../../contract/tool-result.js';

export type TurnStatus = 'completed' | 'suspended' | 'blocked' | 'cancelled' | 'max_rounds' | 'failed';

export type { PendingApproval } from '../../contract/suspension.js';

/** Token usage of a turn: the total, and per model. */
export interface TurnUsage extends Usage {
  readonly byModel: Readonly<Record<string, Usage>>;
  /**
   * Set when the turn delegated to sub-agents: each agent's own usage (the totals above
   * include theirs, so billing of the turn sees everything its sub-agents spent).
   */
  readonly byAgent?: Readonly<Record<string, Usage>>;
  /**
   * The turn's spend by the plugin that caused it: its tools' time, and the tokens of the model
   * calls that read its tools' results (see `attributeUsage`; `(agent)` for rounds no tool led to).
   */
  readonly byPlugin?: Readonly<Record<string, AttributedUsage>>;
  /** The same, summed by owning team (`@Plugin({ owner })`; `(no owner)` for plugins without one). */
  readonly byOwner?: Readonly<Record<string, AttributedUsage>>;
}

/**
 * What `session.send()` and `session.resume()` return. `TOutput` is the type of a
 * typed turn's `output` (the DTO given as `output`); `unknown` for a turn without one.
 */
export interface TurnResult<TOutput = unknown> {
  readonly status: TurnStatus;
  /** The answer's text (a typed turn's: its JSON). */
  readonly reply?: string;
  /**
   * A typed turn's answer (`app.agent({ output })`, `send(…, { output })`), when it completed:
   * the DTO instance, validated. A turn whose answer stayed invalid after its repair rounds
   * ends `failed` with error `OutputInvalid` and no output. Over HTTP and the queue, and read
   * back from a turn's record, it is the plain JSON object.
   */
  readonly output?: TOutput;
  /** Model calls made in this turn. */
  readonly rounds: number;
  readonly toolCalls: readonly ToolCallRecord[];
  readonly usage: TurnUsage;
  /** The calls waiting for a human, when `status` is `suspended`. */
  readonly suspended?: readonly PendingApproval[];
  readonly error?: { readonly code: string; readonly message: string };
}

/** A human's answer to a suspended call. */
export interface Decision {
  readonly callId: string;
  /**
   * `retry` / `skip` answer a call a crash cut off mid-run (its ticket allows only those):
   * run it again with the same idempotency key, or report it skipped.
   */
  readonly decision: 'approve' | 'reject' | 'edit' | 'retry' | 'skip';
  /** With `edit`: the arguments to run the call with instead. */
  readonly args?: unknown;
  /** With `reject`: what the model is told. */
  readonly message?: string;
  /** Why the decision was made, for the audit log (a reject's `message` serves when absent). */
  readonly reason?: string;
}
