import type { TurnStopper } from '../../engine/context/turn-stopper.js';
import { ContextLevel } from '../../engine/context/context-level.js';
import { isStop, type HookOutcome } from '../../engine/hooks/hook-engine.js';
import { KERNEL_KEYS } from '../../contract/kernel-keys.js';
import {
  afterHandoffs,
  finishReply,
  historyOf,
  inTurnEnvelope,
  journalOf,
  turnEnv,
  turnRunner,
  type SessionParts,
  type TurnMeta,
} from './turn-envelope.js';
import { isoTime } from '../durability/turn-record.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import type { ContentPart } from '../../contract/content-part.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import type { TurnResult } from './turn-result.js';
import { runRounds, TurnRunner, type TurnEnd } from './turn-runner.js';
import { newOutput, type OutputSpec, type TurnOutput } from './turn-output.js';

/** A new turn's inputs: the message, the host's turn-level context, the caller's signal. */
export interface NewTurn {
  readonly message: string;
  /** The message's parts when it has images or files; `message` is then its text parts joined. */
  readonly parts?: readonly ContentPart[];
  readonly context: Readonly<Record<string, unknown>> | undefined;
  readonly signal: AbortSignal | TurnStopper | undefined;
  /** The turn's key (see `SendOptions.key`), kept in its record and its journal. */
  readonly key: string | undefined;
  /** The send's own `output` DTO (else the agent's applies). */
  readonly output?: OutputSpec;
}

/**
 * One turn from a message (docs/architecture.md, "The life of a turn"): `message.received` (may block), `task.start`,
 * `planning.started`, the rounds, `message.sending`; the envelope runs `task.end` and the
 * checkpoint.
 */
export function runNewTurn(parts: SessionParts, turn: NewTurn): Promise<TurnResult> {
  const turnIndex = parts.sync.turns;
  const { message } = turn;
  const output = newOutput(turn.output, parts.agent);
  const values: Record<string, unknown> = {
    ...turn.context,
    [KERNEL_KEYS.turnInput]: message,
    [KERNEL_KEYS.turnIndex]: turnIndex,
  };
  // A typed turn keeps its DTO's name with its values: a resume or a recovery elsewhere knows it.
  if (output !== undefined) values[KERNEL_KEYS.output] = output.name;
  const env = turnEnv(parts, new ContextLevel(values), turn.signal, turnIndex, true);
  // The clock reading; formatted (`isoTime`) only where a record keeps it.
  const startedAt = Date.now();
  const history = historyOf(parts);
  const meta: TurnMeta = {
    turnIndex,
    input: message,
    taskInput: message,
    startedAt,
    taskStarted: false,
    runner: undefined,
    key: turn.key,
    parts: turn.parts,
  };
  // The body opens the turn (synchronously while its hooks are) and starts the rounds; the
  // envelope continues with `afterRounds` in its own `then`. Nothing of this frame is held
  // while the rounds run.
  const body = () => {
    const opened = openTurn(parts, env, meta, history, output);
    if (opened instanceof Promise) return opened.then((reached) => rounds(env, reached));
    return rounds(env, opened);
  };
  return inTurnEnvelope(parts, env, meta, body, afterRounds);
}

/**
 * `message.received` (may block), `task.start`, `planning.started`: the runner, or the
 * blocked turn's end. Synchronous while no handler awaits.
 */
function openTurn(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  history: readonly ChatMessage[],
  output: TurnOutput | undefined,
): TurnRunner | TurnEnd | Promise<TurnRunner | TurnEnd> {
  const received = env.hooks.run('message.received', meta.input, env.site);
  if (received instanceof Promise) return received.then((value) => startTask(parts, env, meta, history, value, output));
  return startTask(parts, env, meta, history, received, output);
}

function startTask(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  history: readonly ChatMessage[],
  received: HookOutcome<'message.received'>,
  output: TurnOutput | undefined,
): TurnRunner | TurnEnd | Promise<TurnRunner> {
  if (isStop(received)) {
    meta.runner = turnRunner(parts, env, meta.input, '', history, meta.startedAt);
    return meta.runner.end('blocked', undefined, { code: 'Blocked', message: received.reason });
  }
  meta.taskInput = received;
  meta.taskStarted = true;
  const starting = env.hooks.run('task.start', { input: received, turn: meta.turnIndex }, env.site);
  if (starting instanceof Promise) return starting.then(() => plan(parts, env, meta, history, output));
  return plan(parts, env, meta, history, output);
}

function plan(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  history: readonly ChatMessage[],
  output: TurnOutput | undefined,
): TurnRunner | Promise<TurnRunner> {
  const planning = env.hooks.run('planning.started', parts.agent.spec.instructions, env.site);
  if (planning instanceof Promise)
    return planning.then((instructions) => newRunner(parts, env, meta, history, instructions, output));
  return newRunner(parts, env, meta, history, planning, output);
}

function newRunner(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  history: readonly ChatMessage[],
  instructions: string,
  output: TurnOutput | undefined,
): TurnRunner {
  const runner = turnRunner(parts, env, meta.taskInput, instructions, history, meta.startedAt);
  runner.messages.push(userMessage(meta));
  runner.key = meta.key;
  runner.output = output;
  meta.runner = runner;
  const journal = journalOf(env);
  if (journal !== undefined) {
    // The turn as it opens, written with its first model response.
    runner.journal = journal;
    void journal.open({
      turn: meta.turnIndex,
      key: meta.key!,
      agent: parts.agent.spec.name,
      input: meta.input,
      taskInput: meta.taskInput,
      startedAt: isoTime(meta.startedAt),
      instructions,
      rounds: 0,
      messages: runner.messages,
      toolCalls: [],
      usage: {},
    });
  }
  return runner;
}

/** The rounds of an opened turn; a blocked turn's end as it is. */
function rounds(env: TurnEnv, opened: TurnRunner | TurnEnd): Promise<TurnEnd> {
  if (!(opened instanceof TurnRunner)) return Promise.resolve(opened);
  return runRounds(env, opened);
}

/** After the rounds: the handoffs they asked for, then `message.sending` (see `finishReply`). */
export function afterRounds(
  parts: SessionParts,
  env: TurnEnv,
  meta: TurnMeta,
  end: TurnEnd,
): TurnEnd | Promise<TurnEnd> {
  const runner = meta.runner!;
  const after = afterHandoffs(parts, env, runner, end);
  if (!(after instanceof Promise)) return finishReply(parts, env, runner, end);
  return after.then((handed) => {
    meta.runner = handed.runner;
    return finishReply(handed.parts, handed.env, handed.runner, handed.end);
  });
}

/**
 * The turn's user message: its text, and its parts when it has images or files. When
 * `message.received` rewrote the text (a redaction), the text parts give way to the new
 * text, first, and the images and files follow in their order.
 */
function userMessage(meta: TurnMeta): ChatMessage {
  const { parts, taskInput } = meta;
  if (parts === undefined) return { role: 'user', content: taskInput };
  if (taskInput === meta.input) return { role: 'user', content: taskInput, parts };
  const media = parts.filter((part) => part.type !== 'text');
  return { role: 'user', content: taskInput, parts: taskInput ? [{ type: 'text', text: taskInput }, ...media] : media };
}
