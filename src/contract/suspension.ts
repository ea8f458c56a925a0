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
