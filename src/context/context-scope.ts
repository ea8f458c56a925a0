import type { SessionState } from '../state/session-state.js';

type Values = Readonly<Record<string, unknown>>;
const EMPTY: Values = Object.freeze({});

/**
 * One context level's values. Values are replaced, never mutated, on commit, so holding
 * the record is holding a frozen snapshot of that level.
 */
export class ContextLevel {
  constructor(public values: Values = EMPTY) {}
}

/** The values a member read, fixed at the moment it started. */
export interface ContextSnapshot {
  readonly revision: number;
  readonly session: Values;
  readonly turn: Values | undefined;
  readonly execution: Values | undefined;
}

/**
 * Where a member runs: a session, and possibly a turn and one tool call's execution.
 * Resolution searches execution, then turn, then session; the nearest wins.
 */
export class ContextScope {
  constructor(
    readonly state: SessionState,
    readonly turn: ContextLevel | undefined,
    readonly execution: ContextLevel | undefined,
  ) {}

  withExecution(execution: ContextLevel): ContextScope {
    return new ContextScope(this.state, this.turn, execution);
  }

  snapshot(): ContextSnapshot {
    return {
      revision: this.state.revision,
      session: this.state.session.values,
      turn: this.turn?.values,
      execution: this.execution?.values,
    };
  }

  /** Host access: reads any key, nearest level first. */
  get(key: string): unknown {
    return lookup(this.snapshot(), key);
  }
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
