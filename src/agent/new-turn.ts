import { ContextLevel } from '../context/context-level.js';
import { isStop } from '../hooks/hook-engine.js';
import { KERNEL_KEYS } from '../state/kernel-keys.js';
import { historyFor, loopWithHandoffs } from './delegation/handoff-continuation.js';
import { finishReply, inTurnEnvelope, turnEnv, type SessionParts, type TurnMeta } from './turn-envelope.js';
import type { ChatMessage } from '../models/model-provider.js';
import type { TurnEnv } from '../tools/turn-env.js';
import type { TurnResult } from './turn-result.js';
import { TurnRunner, type TurnEnd } from './turn-runner.js';

/** A new turn's inputs: the message, the host's turn-level context, the caller's signal. */
export interface NewTurn {
  readonly message: string;
  readonly context: Readonly<Record<string, unknown>> | undefined;
  readonly signal: AbortSignal | undefined;
}

/**
 * One turn from a message (DESIGN §7): `message.received` (may block), `task.start`,
 * `planning.started`, the rounds, `message.sending`; the envelope runs `task.end` and the
 * checkpoint.
 */
export function runNewTurn(parts: SessionParts, turn: NewTurn): Promise<TurnResult> {
  const turnIndex = parts.sync.turns;
  const { message } = turn;
  const env = turnEnv(parts, new ContextLevel({ ...turn.context, [KERNEL_KEYS.turnInput]: message, [KERNEL_KEYS.turnIndex]: turnIndex }), turn.signal, turnIndex);
  const startedAt = new Date().toISOString();
  const limits = parts.agent.limits;
  const history = historyFor(parts);
  const meta: TurnMeta = { turnIndex, input: message, taskInput: message, startedAt, taskStarted: false, runner: undefined };
  const bare = () => new TurnRunner(env, limits, meta.taskInput, '', history, startedAt);
  // The body opens the turn, then hands the rounds a `then`: no frame of it is held while they run.
  const body = () => openTurn(parts, env, meta, history).then((opened) => (opened instanceof TurnRunner ? runRounds(parts, env, meta, opened) : opened));
  return inTurnEnvelope(parts, env, meta, bare, body);
}

/** `message.received` (may block), `task.start`, `planning.started`: the runner, or the blocked turn's end. */
async function openTurn(parts: SessionParts, env: TurnEnv, meta: TurnMeta, history: readonly ChatMessage[]): Promise<TurnRunner | TurnEnd> {
  const { input: message, turnIndex, startedAt } = meta;
  const limits = parts.agent.limits;
  // A point without handlers answers synchronously: no await (and no microtask) for it.
  const receiving = env.hooks.run('message.received', message, env.site);
  const received = receiving instanceof Promise ? await receiving : receiving;
  if (isStop(received)) {
    meta.runner = new TurnRunner(env, limits, message, '', history, startedAt);
    return meta.runner.end('blocked', undefined, { code: 'Blocked', message: received.reason });
  }
  const input = received;
  meta.taskInput = input;
  meta.taskStarted = true;
  const starting = env.hooks.run('task.start', { input, turn: turnIndex }, env.site);
  if (starting instanceof Promise) await starting;
  const planning = env.hooks.run('planning.started', parts.agent.spec.instructions, env.site);
  const instructions = planning instanceof Promise ? await planning : planning;
  meta.runner = new TurnRunner(env, limits, input, instructions, history, startedAt);
  meta.runner.messages.push({ role: 'user', content: input });
  return meta.runner;
}

function runRounds(parts: SessionParts, env: TurnEnv, meta: TurnMeta, runner: TurnRunner): Promise<TurnEnd> {
  return loopWithHandoffs(parts, env, runner).then((after) => {
    meta.runner = after.runner;
    return finishReply(after.parts, after.env, after.runner, after.end);
  });
}
