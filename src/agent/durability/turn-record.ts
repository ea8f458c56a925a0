import { describeError } from '../../errors/describe-error.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { StateSchema } from '../../contract/state-schema.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import type { TurnRecord } from '../../engine/stores/session-store.js';
import { isHostKey } from './suspension-record.js';
import type { TurnResult } from '../turn/turn-result.js';
import { plainOutput } from '../turn/turn-output.js';

/**
 * When a turn started: the clock reading (`Date.now()`) of a new turn, or the ISO time a
 * suspended turn's record kept. Formatted by {@link isoTime} only where a record keeps it, so
 * a turn without a store or a suspension never formats a date.
 */
export type TurnStart = number | string;

/** A turn's start as the records keep it (ISO 8601, milliseconds). */
export function isoTime(start: TurnStart): string {
  return typeof start === 'string' ? start : new Date(start).toISOString();
}

/** The stored summary of a turn, from its result. */
export function turnRecord(
  index: number,
  input: string,
  result: TurnResult,
  startedAt: TurnStart,
  key?: string,
): TurnRecord {
  return {
    index,
    ...(key !== undefined && { key }),
    input,
    status: result.status,
    reply: result.reply,
    rounds: result.rounds,
    toolCalls: result.toolCalls.length,
    usage: result.usage.byModel,
    startedAt: isoTime(startedAt),
    endedAt: new Date().toISOString(),
    error: result.error,
    ...(result.output !== undefined && { output: plainOutput(result.output) }),
  };
}

/**
 * Session-level values worth keeping across processes: the persistent state keys plugins
 * declared. Host context (`app.*`) is not among them: it is the host's statement about the
 * current request, given again whenever the host opens the session, never read back.
 */
export function persistentValues(
  values: Readonly<Record<string, unknown>>,
  schema: StateSchema,
): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) {
    if (value === undefined) continue;
    if (schema.stateKey(key)?.persistent) out[key] = value;
  }
  return out;
}

/**
 * The stored values with the session's subject (`trellis.subject`): the user and tenant the
 * host's session context names now, else the subject stored before. Only for erasure.
 */
export function withSubject(
  stored: Record<string, unknown>,
  values: Readonly<Record<string, unknown>>,
): Record<string, unknown> {
  const userId = values['app.user_id'];
  const tenant = values['app.tenant'];
  if (typeof userId !== 'string' && typeof tenant !== 'string') return stored;
  const before = (values[KERNEL_KEYS.subject] ?? {}) as { userId?: string; tenant?: string };
  stored[KERNEL_KEYS.subject] = {
    ...before,
    ...(typeof userId === 'string' && { userId }),
    ...(typeof tenant === 'string' && { tenant }),
  };
  return stored;
}

/** Stored session values without host context, for sessions saved before host context stopped being stored. */
export function withoutHostContext(values: Readonly<Record<string, unknown>>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [key, value] of Object.entries(values)) if (!isHostKey(key) && key !== KERNEL_KEYS.user) out[key] = value;
  return out;
}

/** An error as `TurnResult.error`. */
export function errorInfo(error: unknown): { code: string; message: string } {
  if (TrellisError.is(error)) return { code: error.code, message: error.message };
  return { code: 'Failed', message: describeError(error) };
}
