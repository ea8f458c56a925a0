const HOOK_RESULT = Symbol.for('trellis.hook-result');

import type { SuspendTicket } from '../../contract/suspension.js';

export type { SuspendTicket } from '../../contract/suspension.js';

export type HookResult =
  | { readonly [HOOK_RESULT]: 'block'; readonly reason: string }
  | { readonly [HOOK_RESULT]: 'cancel'; readonly reason: string }
  | { readonly [HOOK_RESULT]: 'suspend'; readonly ticket: SuspendTicket }
  | { readonly [HOOK_RESULT]: 'setResult'; readonly value: unknown }
  | { readonly [HOOK_RESULT]: 'done'; readonly value: unknown };

export type HookResultKind = HookResult[typeof HOOK_RESULT];

/** Stops a `message.received` or `tool.before_call` chain, or blocks a call from `tool.gate`. */
export function block(reason: string): HookResult {
  return { [HOOK_RESULT]: 'block', reason };
}

/** Stops the reply in `message.sending`. */
export function cancel(reason: string): HookResult {
  return { [HOOK_RESULT]: 'cancel', reason };
}

/** From `tool.gate`: parks the call until a human decides (`session.resume`). */
export function suspend(ticket: SuspendTicket | string): HookResult {
  return { [HOOK_RESULT]: 'suspend', ticket: typeof ticket === 'string' ? { message: ticket } : ticket };
}

/** From `tool.gate`: answers the call with `value` without running the tool. */
export function setResult(value: unknown): HookResult {
  return { [HOOK_RESULT]: 'setResult', value };
}

/** From a tool: ends the turn with `value` as the reply. */
export function done(value: unknown): HookResult {
  return { [HOOK_RESULT]: 'done', value };
}

export function isHookResult(value: unknown): value is HookResult {
  return typeof value === 'object' && value !== null && HOOK_RESULT in value;
}

export function hookResultKind(value: HookResult): HookResultKind {
  return value[HOOK_RESULT];
}
