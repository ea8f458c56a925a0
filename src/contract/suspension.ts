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
}
