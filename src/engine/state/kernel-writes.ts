import type { ContextScope } from './context-scope.js';
import type { StateWrite } from '../../contract/state-command.js';
import type { StateSchema } from '../../contract/state-schema.js';

const NONE: readonly never[] = [];

/** Commits the kernel's own bookkeeping (turn input, tool results) as one state command. */
export function commitKernelWrites(scope: ContextScope, schema: StateSchema, writes: readonly StateWrite[]): void {
  scope.state.commit({ baseRevision: scope.state.revision, writes, actions: NONE, effects: NONE }, scope, schema);
}

/**
 * Sets two turn-level kernel keys in one commit, as `commitKernelWrites` with two `turnValue`
 * writes would, without building the command: a tool call records its result this way.
 */
export function commitTurnValues(
  scope: ContextScope,
  schema: StateSchema,
  keys: readonly [string, string],
  first: unknown,
  second: unknown,
): void {
  const turn = scope.turn;
  if (turn === undefined)
    return commitKernelWrites(scope, schema, [turnValue(keys[0], first), turnValue(keys[1], second)]);
  scope.state.commitTurnValues(turn, copyWith(turn.values, keys[0], first, keys[1], second), keys);
}

/**
 * A copy of `source` with two keys set, in the order a spread and two assignments would give.
 * Built key by key on a new literal, not by `{ ...source }`: a spread's copy takes the source's
 * hidden class, whose fields V8 then generalises (const to mutable) at the assignments, so a
 * run's first turn left the spread's cache with nine classes and every later copy on its slow
 * path (docs/performance.md, "What keeps it fast"). Built this way the copies follow the one tree of
 * classes that the keys' order makes.
 */
function copyWith(
  source: Readonly<Record<string, unknown>>,
  first: string,
  firstValue: unknown,
  second: string,
  secondValue: unknown,
): Record<string, unknown> {
  const copy: Record<string, unknown> = {};
  let hasFirst = false;
  let hasSecond = false;
  for (const key in source) {
    if (!Object.prototype.hasOwnProperty.call(source, key)) continue;
    let value = source[key];
    if (key === first) {
      value = firstValue;
      hasFirst = true;
    } else if (key === second) {
      value = secondValue;
      hasSecond = true;
    }
    define(copy, key, value);
  }
  if (!hasFirst) define(copy, first, firstValue);
  if (!hasSecond) define(copy, second, secondValue);
  return copy;
}

function define(target: Record<string, unknown>, key: string, value: unknown): void {
  // An own `__proto__` key (a host's context may carry one) stays a plain property, as a spread keeps it.
  if (key === '__proto__')
    Object.defineProperty(target, key, { value, enumerable: true, writable: true, configurable: true });
  else target[key] = value;
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
