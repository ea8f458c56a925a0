import type { ToolCallRecord } from '../../contract/tool-result.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { ChatMessage, ModelResponse, Usage } from '../../contract/model-provider.js';

/** The schema version of the steps a turn journals (`TurnStep`). */
export const STEPS_VERSION = 1;

/** How a level's values changed since the step before: keys set, keys removed. */
export interface ValuesDelta {
  readonly set?: Readonly<Record<string, unknown>>;
  readonly unset?: readonly string[];
}

/** The state a step left, as changes: session-level persistent keys (`s`) and turn-level values (`t`). */
export interface StateDelta {
  readonly s?: ValuesDelta;
  readonly t?: ValuesDelta;
}

/**
 * Where a turn stands when its journal starts, or starts again: a new turn after
 * `planning.started`, a resumed turn once its decided calls are done, a turn handed to
 * another agent. Everything the turn carries, whole; the steps after it are changes.
 */
export interface OpenStep {
  readonly k: 'open';
  readonly v: typeof STEPS_VERSION;
  readonly turn: number;
  /** The turn's key (`SendOptions.key`, or one made for it). */
  readonly key: string;
  /** For a resumed turn: the key of the resume that opened this journal (`ResumeOptions.key`). */
  readonly resumedBy?: string;
  /** The agent running the turn from here on. */
  readonly agent: string;
  /** The message as it came in (the turn record keeps it). */
  readonly input: string;
  /** The input after `message.received` (`task.end` sees it). */
  readonly taskInput: string;
  readonly startedAt: string;
  /** The system prompt after `planning.started`. */
  readonly instructions: string;
  readonly rounds: number;
  /** The turn's messages so far. */
  readonly messages: readonly ChatMessage[];
  readonly toolCalls: readonly ToolCallRecord[];
  readonly usage: Readonly<Record<string, Usage>>;
  /** Model usage by round so far, for `usage.byPlugin` (rounds after the opening come from their model steps). Optional: older journals have none. */
  readonly roundUsage?: Readonly<Record<number, Usage>>;
  readonly handedOver?: Readonly<Record<string, Usage>>;
  /** A resumed turn's reply from `done(...)`: the turn ends with it. */
  readonly done?: string;
  /** Session-level persistent values, whole. */
  readonly session: Readonly<Record<string, unknown>>;
  /** Turn-level values, whole, without host context and the kernel's per-turn inputs. */
  readonly turnValues: Readonly<Record<string, unknown>>;
}

/** A model response as the model gave it, journalled before `llm.after` and before any of its calls runs. */
export interface ModelStep extends StateDelta {
  readonly k: 'model';
  readonly round: number;
  readonly response: ModelResponse;
  /** The tools offered in that round, when `tool.register` / `tool.select` / filters changed them. */
  readonly offered?: readonly string[];
}

/** The response after `llm.after` rewrote it (journalled only where `llm.after` has handlers). */
export interface AfterStep extends StateDelta {
  readonly k: 'after';
  readonly round: number;
  readonly response: ModelResponse;
}

/** A call whose tool is not retried after a crash is about to run (its middleware and tool). */
export interface StartStep {
  readonly k: 'start';
  readonly round: number;
  /** The call's position among its round's calls. */
  readonly at: number;
  readonly id: string;
}

/** A call finished: its record, what the model reads, whether it ended the turn. */
export interface ResultStep extends StateDelta {
  readonly k: 'result';
  readonly round: number;
  readonly at: number;
  readonly record: ToolCallRecord;
  readonly content: string;
  readonly done: boolean;
}

/** One entry of a turn's step journal (docs/durable-steps.md), as the store keeps it. */
export type TurnStep = OpenStep | ModelStep | AfterStep | StartStep | ResultStep;

/**
 * Reads the steps a store gave back (`StoredSession.steps`) before anything runs from them,
 * failing closed on anything odd: the last `open` step and the steps after it.
 *
 * @throws TrellisError `InvalidCheckpoint` (kind `system`) naming the session when the steps
 *   are not ones this Trellis wrote; nothing has run then.
 */
export function parseSteps(steps: readonly unknown[], sessionId: string): readonly TurnStep[] {
  const fail = (why: string) =>
    new TrellisError(
      'InvalidCheckpoint',
      `The journal of the turn that session '${sessionId}' was running is unusable: ${why}; nothing was run`,
      {
        hint: `Delete the session (trellis sessions delete ${sessionId}) or restore the store from a backup; trellis doctor checks the rest of the store`,
        kind: 'system',
        details: { sessionId },
      },
    );
  let open = -1;
  for (let index = 0; index < steps.length; index++) {
    const step = steps[index] as Partial<TurnStep> | null;
    if (typeof step !== 'object' || step === null) throw fail(`step ${index} is not an object`);
    switch (step.k) {
      case 'open': {
        const o = step;
        if (o.v !== STEPS_VERSION)
          throw fail(`its schema version is ${String(o.v)}, this Trellis reads ${STEPS_VERSION}`);
        if (
          typeof o.turn !== 'number' ||
          typeof o.rounds !== 'number' ||
          typeof o.key !== 'string' ||
          typeof o.agent !== 'string'
        )
          throw fail(`step ${index} does not say which turn it opens`);
        if (
          typeof o.input !== 'string' ||
          typeof o.taskInput !== 'string' ||
          typeof o.instructions !== 'string' ||
          typeof o.startedAt !== 'string'
        )
          throw fail(`step ${index} has no input or instructions`);
        if (
          !Array.isArray(o.messages) ||
          !Array.isArray(o.toolCalls) ||
          !isRecord(o.usage) ||
          !isRecord(o.session) ||
          !isRecord(o.turnValues)
        )
          throw fail(`step ${index} is missing the turn's messages or state`);
        if (o.roundUsage !== undefined && !isRecord(o.roundUsage))
          throw fail(`step ${index} has usage by round that is not a record`);
        open = index;
        break;
      }
      case 'model':
      case 'after': {
        const m = step as Partial<ModelStep>;
        if (
          typeof m.round !== 'number' ||
          !isRecord(m.response) ||
          typeof m.response.text !== 'string' ||
          !Array.isArray(m.response.toolCalls)
        )
          throw fail(`step ${index} is not a model response`);
        break;
      }
      case 'start':
      case 'result': {
        const c = step as Partial<ResultStep>;
        if (typeof c.round !== 'number' || typeof c.at !== 'number') throw fail(`step ${index} does not name its call`);
        if (step.k === 'result' && (!isRecord(c.record) || typeof c.content !== 'string'))
          throw fail(`step ${index} has no result`);
        break;
      }
      default:
        throw fail(`step ${index} is of an unknown kind '${String(step.k)}'`);
    }
  }
  if (open < 0) throw fail('it has no opening step');
  return steps.slice(open) as readonly TurnStep[];
}

/** The opening step of parsed steps (see {@link parseSteps}). */
export function openStepOf(steps: readonly TurnStep[]): OpenStep {
  return steps[0] as OpenStep;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
