import { describeError } from '../errors/describe-error.js';
import { TrellisError } from '../errors/trellis-error.js';
import type { StateSchema } from '../state/state-schema.js';
import { KERNEL_KEYS } from '../state/kernel-keys.js';
import type { TurnRecord } from '../stores/session-store.js';
import type { TurnResult } from './turn-result.js';

/** The stored summary of a turn, from its result. */
export function turnRecord(index: number, input: string, result: TurnResult, startedAt: string): TurnRecord {
  return {
    index,
    input,
    status: result.status,
    reply: result.reply,
    rounds: result.rounds,
    toolCalls: result.toolCalls.length,
    usage: result.usage.byModel,
    startedAt,
    endedAt: new Date().toISOString(),
    error: result.error,
  };
}

/** Session-level values worth keeping across processes: persistent state keys, host context, the user. */
export function persistentValues(values: Readonly<Record<string, unknown>>, schema: StateSchema): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    if (key.startsWith('app.') || key === KERNEL_KEYS.user || schema.stateKey(key)?.persistent) out[key] = value;
  }
  return out;
}

/** An error as `TurnResult.error`. */
export function errorInfo(error: unknown): { code: string; message: string } {
  if (TrellisError.is(error)) return { code: error.code, message: error.message };
  return { code: 'Failed', message: describeError(error) };
}
