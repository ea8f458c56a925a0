import type { ToolCallInfo } from './hook-payloads.js';

/**
 * The arguments of a call, as the model sent them, keyed by the fields of `T`.
 * Every value is `unknown`: a gate runs before validation, so a field may be missing or
 * of another type than the DTO declares. Check what you rely on.
 */
export type ToolCallArgs<T extends object = Record<string, unknown>> = { readonly [K in keyof T]?: unknown };

/**
 * A call's arguments as an object, for a `tool.gate` or `tool.before_call` hook, with no
 * cast: `argsOf<IssueRefund>(call).amountCents` (typo-checked against the DTO, typed
 * `unknown` because nothing has validated it yet). Arguments that are not a JSON object —
 * text the model garbled, an array, `null` — give `{}`; validation refuses them before the
 * tool runs.
 *
 * @example
 * @Hook('tool.gate')
 * gate(call: ToolCallInfo) {
 *   const { amountCents } = argsOf<IssueRefund>(call);
 *   if (typeof amountCents !== 'number' || amountCents > 10_000) return suspend({ message: 'Needs a supervisor' });
 * }
 */
export function argsOf<T extends object = Record<string, unknown>>(call: Pick<ToolCallInfo, 'args'>): ToolCallArgs<T> {
  const args = call.args;
  return typeof args === 'object' && args !== null && !Array.isArray(args) ? args : {};
}
