import type { ContextLevel } from './context-key.js';

/** One key update of a command: a value, or a function of the committed value. */
export interface StateWrite {
  readonly key: string;
  readonly level: ContextLevel;
  /** Exclusive writes conflict with any other write of the same key since the command's base revision. */
  readonly exclusive: boolean;
  readonly value?: unknown;
  readonly fn?: (previous: unknown) => unknown;
  readonly fallback?: unknown;
}

export interface ScheduledAction {
  readonly type: string;
  readonly payload: unknown;
  /** Who scheduled it, for error messages. */
  readonly by: string;
}

export interface EmittedEffect {
  readonly type: string;
  readonly payload: unknown;
  readonly by: string;
}

/**
 * Everything one handler wants changed, committed atomically: key updates, actions to run
 * in the current point's EXECUTE phase, and effects dispatched after the commit.
 */
export interface StateCommand {
  /** The revision the handler read; exclusive writes to keys changed since then are refused. */
  readonly baseRevision: number;
  readonly writes: readonly StateWrite[];
  readonly actions: readonly ScheduledAction[];
  readonly effects: readonly EmittedEffect[];
}

export function isEmptyCommand(command: StateCommand): boolean {
  return command.writes.length === 0 && command.actions.length === 0 && command.effects.length === 0;
}

/** The exclusive keys a command writes, outside the execution level (which no other call shares). */
export function exclusiveKeys(command: StateCommand): string[] {
  const keys: string[] = [];
  for (const write of command.writes) if (write.exclusive && write.level !== 'execution') keys.push(write.key);
  return keys;
}

/** Merges commands of one parallel batch into one, in the given order. */
export function mergeCommands(commands: readonly StateCommand[]): StateCommand {
  if (commands.length === 1) return commands[0]!;
  return {
    baseRevision: Math.min(...commands.map((c) => c.baseRevision)),
    writes: commands.flatMap((c) => c.writes),
    actions: commands.flatMap((c) => c.actions),
    effects: commands.flatMap((c) => c.effects),
  };
}
