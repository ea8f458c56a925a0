import type { TrellisErrorCode } from '../errors/trellis-error.js';
import type { RolledUpUsage } from './agent-usage.js';

/**
 * The one vocabulary of a tool call's outcome:
 * - {@link ToolResult} — what a tool (through its middleware) produced: a value or an error;
 * - {@link ToolErrorInfo} — the error the model sees, with a code from the closed union;
 * - {@link ToolCallRecord} — a finished call as `TurnResult.toolCalls` lists it: the result
 *   plus which call, which round and how long.
 */
export interface ToolErrorInfo {
  readonly code: TrellisErrorCode;
  readonly message: string;
  readonly retryable: boolean;
}

/** The outcome of one tool call. Errors are results, never throws, once they leave the pipeline. */
export type ToolResult =
  | { readonly ok: true; readonly value: unknown; readonly done?: boolean }
  | { readonly ok: false; readonly error: ToolErrorInfo };

/** One tool call of a turn, as it ended. */
export type ToolCallRecord = {
  readonly callId: string;
  readonly tool: string;
  readonly round: number;
  readonly durationMs: number;
  /** Set for a tool of a plugin with an owner (`@Plugin({ owner })`): the plugin and its owning team. */
  readonly plugin?: string;
  readonly owner?: string;
  /** A sub-agent's call (agent as tool): the tokens its turn used, counted into this turn's usage. */
  readonly usage?: RolledUpUsage;
} & (
  | { readonly ok: true; readonly value: unknown; readonly error?: undefined }
  | { readonly ok: false; readonly value?: undefined; readonly error: ToolErrorInfo }
);

/** A successful result. */
export function okResult(value: unknown): ToolResult {
  return { ok: true, value };
}

/** An error result the model reads as `{ error: { code, message, retryable } }`. */
export function errorResult(code: TrellisErrorCode, message: string, retryable = false): ToolResult {
  return { ok: false, error: { code, message, retryable } };
}
