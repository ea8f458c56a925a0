import type { ContextScope } from '../context/context-scope.js';
import type { StateWrite } from './state-command.js';
import type { StateSchema } from './state-schema.js';

const NONE: readonly never[] = [];

/** Commits the kernel's own bookkeeping (turn input, tool results) as one state command. */
export function commitKernelWrites(scope: ContextScope, schema: StateSchema, writes: readonly StateWrite[]): void {
  scope.state.commit({ baseRevision: scope.state.revision, writes, actions: NONE, effects: NONE }, scope, schema);
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
