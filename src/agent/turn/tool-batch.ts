import type { ModelToolCall } from '../../contract/model-provider.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import { executeToolCall, type CallEnd } from '../../engine/tools/tool-pipeline.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';

/** A call that never ran because the turn stopped first. */
export const INTERRUPTED = 'interrupted';

export type BatchOutcome =
  CallEnd | { readonly kind: typeof INTERRUPTED; readonly callId: string; readonly tool: string };

/**
 * Runs a round's tool calls, at most `limit` at once; outcomes come back in call order.
 * After a Block or a cancellation, calls not yet started are not started.
 */
export async function runToolBatch(
  env: TurnEnv,
  calls: readonly ModelToolCall[],
  round: number,
  tools: ReadonlyMap<string, RegisteredTool>,
  limit: number,
): Promise<BatchOutcome[]> {
  const outcomes = new Array<BatchOutcome>(calls.length);
  let next = 0;
  let stopped = false;
  const worker = async () => {
    while (next < calls.length) {
      const index = next++;
      const call = calls[index]!;
      if (stopped || env.site.signal.aborted || env.stopper?.signal.aborted === true) {
        outcomes[index] = { kind: INTERRUPTED, callId: call.id, tool: call.name };
        continue;
      }
      const outcome = await executeToolCall(env, call, round, index, tools);
      outcomes[index] = outcome;
      if (outcome.kind === 'blocked') stopped = true;
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, calls.length)) }, worker));
  return outcomes;
}
