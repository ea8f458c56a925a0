type Values = Readonly<Record<string, unknown>>;
/** The values of a level nothing was written to. */
export const EMPTY_VALUES: Values = Object.freeze({});
const EMPTY = EMPTY_VALUES;

/**
 * One context level's values. Values are replaced, never mutated, on commit, so holding
 * the record is holding a frozen snapshot of that level.
 */
export class ContextLevel {
  constructor(public values: Values = EMPTY) {}
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
  let value = snapshot.execution?.[key];
  if (value !== undefined) return value;
  value = snapshot.turn?.[key];
  if (value !== undefined) return value;
  return snapshot.session[key];
}

/** The levels a lookup searched, for `MissingContext` messages. */
export function searchedLevels(snapshot: ContextSnapshot): string[] {
  const levels: string[] = [];
  if (snapshot.execution) levels.push('execution');
  if (snapshot.turn) levels.push('turn');
  levels.push('session');
  return levels;
}
