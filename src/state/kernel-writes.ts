import type { ContextScope } from '../context/context-scope.js';
import type { StateWrite } from './state-command.js';
import type { StateSchema } from './state-schema.js';

const NONE: readonly never[] = [];

/** Commits the kernel's own bookkeeping (turn input, tool results) as one state command. */
export function commitKernelWrites(scope: ContextScope, schema: StateSchema, writes: readonly StateWrite[]): void {
  scope.state.commit({ baseRevision: scope.state.revision, writes, actions: NONE, effects: NONE }, scope, schema);
}

/**
 * Sets two turn-level kernel keys in one commit, as `commitKernelWrites` with two `turnValue`
 * writes would, without building the command: a tool call records its result this way.
 */
export function commitTurnValues(scope: ContextScope, schema: StateSchema, keys: readonly [string, string], first: unknown, second: unknown): void {
  const turn = scope.turn;
  if (turn === undefined) return commitKernelWrites(scope, schema, [turnValue(keys[0], first), turnValue(keys[1], second)]);
  const values: Record<string, unknown> = { ...turn.values };
  values[keys[0]] = first;
  values[keys[1]] = second;
  scope.state.commitTurnValues(turn, values, keys);
}

export function turnValue(key: string, value: unknown): StateWrite {
  return { key, level: 'turn', exclusive: false, value };
}

export function turnUpdate(key: string, fn: (previous: unknown) => unknown): StateWrite {
  return { key, level: 'turn', exclusive: false, fn };
}

export function sessionValue(key: string, value: unknown): StateWrite {
  return { key, level: 'session', exclusive: false, value };
}
