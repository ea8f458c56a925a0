/** What a gate may park a call with; `allowedDecisions` defaults to all three. */
export interface SuspendTicket {
  readonly message: string;
  readonly allowedDecisions?: readonly ('approve' | 'reject' | 'edit' | 'retry' | 'skip')[];
  readonly data?: Readonly<Record<string, unknown>>;
}

/** A call parked by a gate, waiting for a decision. */
export interface PendingApproval {
  readonly callId: string;
  readonly tool: string;
  /** The arguments as the model wrote them (JSON text). */
  readonly arguments: string;
  readonly ticket: SuspendTicket;
  /**
   * Set when the call waits inside a sub-agent: the agents from this session's agent down
   * to the one that made the call (e.g. `['orchestrator', 'billing']`). Its `callId` is then
   * the caller's call id, `/`, and the id inside the sub-agent (`call_1/call_7`); decide on
   * it with that id like any other.
   */
  readonly path?: readonly string[];
}

/**
 * The ticket of a call that a crash cut off mid-run (it started and left no result): only a
 * human can say whether its effect happened, so it waits for `retry` (run again with the same
 * `ctx.idempotencyKey`) or `skip`. `original` is the message it was approved with, `args` the
 * arguments it ran with when they were not the model's, `spentBy` the key of the resume whose
 * decision it was cut off under (that decision is consumed: the same resume tried again does
 * not apply it a second time).
 */
export function interruptedTicket(
  tool: string,
  approved: boolean,
  original?: string,
  args?: unknown,
  spentBy?: string,
): SuspendTicket {
  return {
    message: `${approved ? 'An approved call' : 'A call'} of ${tool} was cut off mid-run (the process stopped before its result was saved); it may or may not have run. Retry it (it gets the same idempotency key) or skip it`,
    allowedDecisions: ['retry', 'skip'],
    data: {
      interrupted: true,
      ...(original !== undefined && { original }),
      ...(args !== undefined && { args }),
      ...(spentBy !== undefined && { spentBy }),
    },
  };
}
