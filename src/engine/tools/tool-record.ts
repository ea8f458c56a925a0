import type { ToolErrorInfo } from '../../contract/tool-result.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import { commitTurnValues } from '../state/kernel-writes.js';
import type { TurnEnv } from './turn-env.js';

/**
 * A call's result recorded at turn level in one commit: `<tool name>.result` (where another
 * plugin may `@Requires` a tool's latest result) and `trellis.last_tool_results` (the results
 * of the latest round). Used by the tool-call path, and by a replay after a crash to put back
 * the record of each call that had finished.
 */
export function recordToolResult(
  env: TurnEnv,
  callId: string,
  round: number,
  tool: RegisteredTool,
  outcome: { readonly ok: boolean; readonly value?: unknown; readonly error?: ToolErrorInfo },
): void {
  const value = outcome.ok ? outcome.value : { error: outcome.error };
  // The results of the latest round only: keeping the whole turn made every call copy a growing list.
  // Read and written in one synchronous step, so no other call's commit can come between.
  const previous = env.site.scope.turn?.values[KERNEL_KEYS.lastToolResults] as { round: number }[] | undefined;
  const entry = { callId, tool: tool.name, ok: outcome.ok, result: value, round };
  // The first result of a round (the common case) starts a list of its final length: the list
  // stays in the turn's context until the next round, and `[]` grown by `push` keeps room for 17.
  let latest: unknown[] | undefined;
  if (previous) {
    for (const earlier of previous) {
      if (earlier.round !== round) continue;
      if (latest) latest.push(earlier);
      else latest = [earlier];
    }
  }
  if (latest) latest.push(entry);
  else latest = [entry];
  commitTurnValues(env.site.scope, env.registry, recordKeys(tool), value, latest);
}

const recordKeyPairs = new WeakMap<RegisteredTool, readonly [string, string]>();

/** The turn-level keys a call's result is recorded under; built once per tool. */
function recordKeys(tool: RegisteredTool): readonly [string, string] {
  let keys = recordKeyPairs.get(tool);
  if (keys === undefined) {
    keys = Object.freeze([`${tool.name}.result`, KERNEL_KEYS.lastToolResults] as const);
    recordKeyPairs.set(tool, keys);
  }
  return keys;
}

/** The tool message the model reads. */
export function toolMessage(outcome: { ok: boolean; value?: unknown; error?: ToolErrorInfo }): string {
  if (!outcome.ok) return JSON.stringify({ error: outcome.error });
  return typeof outcome.value === 'string' ? outcome.value : JSON.stringify(outcome.value ?? null);
}
