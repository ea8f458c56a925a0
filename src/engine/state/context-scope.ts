import type { SessionState } from './session-state.js';
import { lookup, type ContextLevel, type ContextSnapshot } from '../context/context-level.js';

export { ContextLevel, lookup, searchedLevels, type ContextSnapshot } from '../context/context-level.js';

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
