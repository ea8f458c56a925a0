import { STEERING_KEYS } from '../../contract/kernel-keys.js';

type Values = Readonly<Record<string, unknown>>;
/** The values of a level nothing was written to. */
export const EMPTY_VALUES: Values = Object.freeze({});
const EMPTY = EMPTY_VALUES;

/**
 * One context level's values. Values are replaced, never mutated, on commit, so holding
 * the record is holding a frozen snapshot of that level.
 */
export class ContextLevel {
  #values: Values = EMPTY;
  #steered = false;

  constructor(values: Values = EMPTY) {
    this.values = values;
  }

  get values(): Values {
    return this.#values;
  }

  set values(values: Values) {
    this.#values = values;
    if (!this.#steered && values !== EMPTY) this.#steered = hasSteeringKey(values);
  }

  /**
   * Whether one of the kernel's {@link STEERING_KEYS} was ever set on this level. False means
   * none is set now, so the turn loop may skip reading them (a megamorphic load each: the
   * values change shape as results are recorded). Never reset: a cleared key only costs the
   * fast path.
   */
  get steered(): boolean {
    return this.#steered;
  }

  /**
   * Replaces the values with ones that add no steering key to the current ones (the kernel's
   * record of a tool result): the check of {@link values}' setter is skipped.
   */
  assignUnsteered(values: Values): void {
    this.#values = values;
  }
}

function hasSteeringKey(values: Values): boolean {
  for (let index = 0; index < STEERING_KEYS.length; index++)
    if (values[STEERING_KEYS[index]!] !== undefined) return true;
  return false;
}

/** The turn and execution levels a commit may write besides the session's own. */
export interface InnerLevels {
  readonly turn: ContextLevel | undefined;
  readonly execution: ContextLevel | undefined;
}

/** The values a member read, fixed at the moment it started. */
export interface ContextSnapshot {
  readonly revision: number;
  readonly session: Values;
  readonly turn: Values | undefined;
  readonly execution: Values | undefined;
}

/** Reads a key from a snapshot, nearest level first; `undefined` when no level has it. */
export function lookup(snapshot: ContextSnapshot, key: string): unknown {
  const { execution, turn, session } = snapshot;
  // Own properties only: a key set on Object.prototype (`'app.scopes'`) is no context value.
  let value = execution?.[key];
  if (value !== undefined && hasOwn(execution!, key)) return value;
  value = turn?.[key];
  if (value !== undefined && hasOwn(turn!, key)) return value;
  value = session[key];
  return value !== undefined && hasOwn(session, key) ? value : undefined;
}

const hasOwn = (values: Values, key: string): boolean => Object.prototype.hasOwnProperty.call(values, key);

/** The levels a lookup searched, for `MissingContext` messages. */
export function searchedLevels(snapshot: ContextSnapshot): string[] {
  const levels: string[] = [];
  if (snapshot.execution) levels.push('execution');
  if (snapshot.turn) levels.push('turn');
  levels.push('session');
  return levels;
}
