/** One tool call of a recorded exchange. */
export interface RecordedToolCall {
  readonly tool: string;
  readonly ok: boolean;
  /** The error code when the call failed. */
  readonly error?: string;
}

/** One completed exchange as transcript memory keeps it. */
export interface ExchangeRecord {
  /** The turn index within the session. */
  readonly turn: number;
  readonly input: string;
  readonly reply: string | undefined;
  readonly status: string;
  /** ISO time the exchange was recorded. */
  readonly at: string;
  readonly toolCalls: readonly RecordedToolCall[];
}
