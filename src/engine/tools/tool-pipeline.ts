import type { ModelToolCall } from '../../contract/model-provider.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import type { CallEnd } from './call-end.js';
import { ToolCallRun, type CallStep } from './tool-call-run.js';
import { toolFailure } from './tool-invoke.js';
import type { TurnEnv } from './turn-env.js';

export type { CallEnd, CallResultEnd } from './call-end.js';
export { ToolCallRun, type CallStep } from './tool-call-run.js';
export { toolFailure } from './tool-invoke.js';
export { recordToolResult, toolMessage } from './tool-record.js';

export interface CallOptions {
  /** A human approved the call: the gate is not asked again. */
  readonly approved?: boolean;
}

/**
 * Starts one tool call (see {@link ToolCallRun} for its stages). The turn loop uses it and
 * awaits the chain itself (`step.running`, then `step.ran`), so no promise or closure is
 * made per call to continue after the tool, and no suspended frame of the pipeline is held
 * while the tool runs. `position` is the call's index in its round's response (-1 outside a
 * model turn): with the round, it is the call's place, which names its idempotency key and
 * its steps in the journal.
 */
export function startToolCall(
  env: TurnEnv,
  call: ModelToolCall,
  round: number,
  position: number,
  tools: ReadonlyMap<string, RegisteredTool>,
  options?: CallOptions,
): CallStep {
  return new ToolCallRun(env, call, round, position, tools.get(call.name), options?.approved === true).start(tools);
}

/**
 * One tool call to its end: gate → before_call → input validation → @Requires →
 * middleware → tool → after_call | error → result recorded → memory.write → journal. Every
 * failure becomes an error result the model sees; nothing here throws at the turn except a
 * failing hook (or a lost lease).
 */
export function executeToolCall(
  env: TurnEnv,
  call: ModelToolCall,
  round: number,
  position: number,
  tools: ReadonlyMap<string, RegisteredTool>,
  options?: CallOptions,
): Promise<CallEnd> {
  let step: CallStep;
  try {
    step = startToolCall(env, call, round, position, tools, options);
  } catch (error) {
    return Promise.reject(error);
  }
  if (step instanceof ToolCallRun) return afterRunning(step);
  if (step instanceof Promise)
    return step.then((reached) => (reached instanceof ToolCallRun ? afterRunning(reached) : reached));
  return Promise.resolve(step);
}

function afterRunning(run: ToolCallRun): Promise<CallEnd> {
  return run.running.then(
    (result) => run.ran(result),
    (error: unknown) => run.ran(toolFailure(error)),
  );
}
