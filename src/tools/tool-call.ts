/** A tool call as hooks see it at `tool.gate` and `tool.before_call`. */
export interface ToolCallInfo {
  readonly callId: string;
  readonly tool: string;
  readonly plugin: string;
  /** The tool's `@Tool({ tags })`, so policies can act on kinds of tools. */
  readonly tags: readonly string[];
  /** The arguments as parsed from the model's JSON (not yet validated), or the raw text if unparsable. */
  readonly args: unknown;
  readonly round: number;
}

/** What `tool.after_call`, `tool.error` and `memory.write` handlers see of a finished call. */
export interface ToolCallOutcome {
  readonly kind: 'tool_result';
  readonly call: ToolCallInfo;
  readonly ok: boolean;
  readonly value?: unknown;
  readonly error?: { readonly code: string; readonly message: string; readonly retryable: boolean };
}

/** What `memory.write` handlers see at the end of a turn. */
export interface TurnExchange {
  readonly kind: 'exchange';
  readonly input: string;
  readonly reply: string | undefined;
  readonly status: string;
}
