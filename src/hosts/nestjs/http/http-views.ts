import type { PendingApproval, TurnResult } from '../../../../index.js';

/**
 * A waiting call as the sessions API sends it: `arguments` is the JSON object the model
 * wrote (`{ "filename": "q3.csv" }`), not its text; arguments that were not JSON stay the text.
 */
export type PendingCallView = Omit<PendingApproval, 'arguments'> & { readonly arguments: unknown };

/** A `TurnResult` as the sessions API sends it: its `suspended` calls as {@link PendingCallView}s. */
export type TurnResultView = Omit<TurnResult, 'suspended'> & { readonly suspended?: readonly PendingCallView[] };

/** One waiting call for a JSON response: its arguments parsed. */
export function pendingCallView(call: PendingApproval): PendingCallView {
  return { ...call, arguments: parsedArguments(call.arguments) };
}

/**
 * A turn's result for a JSON response (or the `result` event of a stream): a typed turn's
 * `output` as the plain JSON object its DTO instance serialises to.
 */
export function turnResultView(result: TurnResult): TurnResultView {
  const plain =
    result.output === undefined ? result : { ...result, output: JSON.parse(JSON.stringify(result.output)) as unknown };
  return plain.suspended === undefined ? plain : { ...plain, suspended: plain.suspended.map(pendingCallView) };
}

function parsedArguments(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return text;
  }
}
