import type { TurnEnv } from '../../engine/tools/turn-env.js';
import type { Decision } from '../turn/turn-result.js';

/**
 * Decisions a resumed turn routes to the sub-agent behind one of its calls, by call id.
 * Keyed by the turn's environment, so they live exactly as long as the resumed turn: the
 * agent tool takes them when the pipeline runs the call again, and resumes its child
 * session with them instead of starting a new turn there.
 */
const stashes = new WeakMap<TurnEnv, Map<string, readonly Decision[]>>();

export function stashResume(env: TurnEnv, callId: string, decisions: readonly Decision[]): void {
  let stash = stashes.get(env);
  if (!stash) stashes.set(env, (stash = new Map()));
  stash.set(callId, decisions);
}

/** The decisions stashed for this call, once. */
export function takeResume(env: TurnEnv, callId: string): readonly Decision[] | undefined {
  const stash = stashes.get(env);
  const decisions = stash?.get(callId);
  stash?.delete(callId);
  return decisions;
}
