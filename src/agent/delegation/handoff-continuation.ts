import type { ChatMessage } from '../../contract/model-provider.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import { commitKernelWrites, sessionValue, turnValue } from '../../engine/state/kernel-writes.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { journalOf, turnEnv, type LoopEnd, type SessionParts } from '../turn/turn-envelope.js';
import { isoTime } from '../durability/turn-record.js';
import { totalUsage, TurnRunner, type TurnEnd } from '../turn/turn-runner.js';
import { handedOverUsage } from './usage-rollup.js';

/** The session's active agent after a handoff: who has it, who gave it, and from which message on. */
export interface ActiveAgent {
  readonly agent: string;
  readonly from: string;
  /** Transcript length when the handoff's turn started: the `history` filter applies before it. */
  readonly at: number;
}

/**
 * After rounds that handed the conversation over, the same turn goes on with the new agent
 * (its instructions after `planning.started`, its plugins, model and limits, the turn's
 * messages so far), and the session's active agent is that agent from now on.
 * `agent.delegated` reports each handoff.
 */
export async function handingOver(
  parts: SessionParts,
  env: TurnEnv,
  runner: TurnRunner,
  end: TurnEnd,
): Promise<LoopEnd> {
  while (end.handoff) {
    const { agent, from } = end.handoff;
    const target = parts.host.agent?.(agent);
    if (!target) break;
    const active: ActiveAgent = { agent, from, at: parts.sync.history.length };
    commitKernelWrites(env.site.scope, env.registry, [
      sessionValue(KERNEL_KEYS.activeAgent, active),
      turnValue(KERNEL_KEYS.handoff, undefined),
    ]);
    const callId =
      runner
        .toolCallRecords()
        .reverse()
        .find((c) => c.tool.length > 0)?.callId ?? '';
    parts = { ...parts, agent: target };
    const journal = journalOf(env);
    env = turnEnv(
      parts,
      env.site.scope.turn!,
      env.stopper ?? env.site.signal,
      env.turnIndex,
      journal ?? false,
      env.site.spend,
    );
    const instructions = await env.hooks.run('planning.started', target.spec.instructions, env.site);
    const next = new TurnRunner(env, target.limits, runner.input, instructions, historyFor(parts), runner.startedAt);
    next.carryOn(runner);
    next.rollUp = runner.rollUp;
    next.handedOver = handedOverUsage(runner.handedOver, totalUsage(runner.usage), runner.agent);
    runner = next;
    // The journal opens again with the agent that has the turn now, written with its first step.
    void journal?.open({
      turn: env.turnIndex,
      key: runner.key ?? '',
      agent,
      input: runner.input,
      taskInput: runner.input,
      startedAt: isoTime(runner.startedAt),
      instructions,
      rounds: runner.rounds,
      messages: runner.messages,
      toolCalls: runner.toolCallRecords(),
      usage: runner.usage,
      roundUsage: runner.roundUsage,
      handedOver: runner.handedOver,
    });
    const reported = env.hooks.run(
      'agent.delegated',
      { kind: 'handoff', from, to: agent, callId, status: 'handed_off', path: env.delegation?.path ?? [from] },
      env.site,
    );
    if (reported instanceof Promise) await reported;
    end = await runner.loop();
  }
  return { parts, env, runner, end };
}

/** The transcript as the session's active agent sees it: the handoff's `history` filter before the handoff, all of it after. */
export function historyFor(parts: SessionParts): readonly ChatMessage[] {
  const history = parts.sync.history;
  const active = parts.state.session.values[KERNEL_KEYS.activeAgent] as ActiveAgent | undefined;
  if (!active || active.agent !== parts.agent.spec.name) return history;
  const filter = parts.host.agent?.(active.from)?.spec.handoffs?.find((h) => h.agent === active.agent)?.history;
  if (!filter) return history;
  return [...filter(history.slice(0, active.at)), ...history.slice(active.at)];
}
