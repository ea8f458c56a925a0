import { ContextLevel, type InnerLevels } from '../context/context-level.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { EventBus } from '../events/event-bus.js';
import type { StateCommand, StateWrite } from '../../contract/state-command.js';
import type { StateSchema } from '../../contract/state-schema.js';

/**
 * The committed state of one session: its session-level values and a revision that goes
 * up by one per commit. Turn and execution levels live in the scopes that reference it.
 */
export class SessionState {
  revision = 0;
  readonly session = new ContextLevel();
  /** The revision at which each key was last written, for stale-command detection. */
  private readonly writtenAt = new Map<string, number>();

  constructor(
    readonly sessionId: string,
    private readonly events?: EventBus,
  ) {}

  /**
   * Commits a command atomically: either every write lands and the revision goes up by
   * one, or nothing changes and a `TrellisError` says why.
   */
  commit(command: StateCommand, scope: InnerLevels, schema: StateSchema): void {
    this.validate(command, schema);
    if (command.writes.length === 0) return;
    let session: Record<string, unknown> | undefined;
    let turn: Record<string, unknown> | undefined;
    let execution: Record<string, unknown> | undefined;
    for (const write of command.writes) {
      if (write.level === 'session') apply((session ??= { ...this.session.values }), write);
      else if (write.level === 'turn') apply((turn ??= { ...requireLevel(scope.turn, write).values }), write);
      else apply((execution ??= { ...requireLevel(scope.execution, write).values }), write);
    }
    if (session) this.session.values = session;
    if (turn) scope.turn!.values = turn;
    if (execution) scope.execution!.values = execution;
    const revision = ++this.revision;
    for (const write of command.writes) if (write.level !== 'execution') this.writtenAt.set(write.key, revision);
    if (this.events?.observed) {
      this.events.emit({
        type: 'state.committed',
        sessionId: this.sessionId,
        revision,
        keys: command.writes.map((w) => w.key),
      });
    }
  }

  /**
   * The kernel's own turn-level writes (plain, non-exclusive, no actions or effects), already
   * applied to a copy of the turn's values: one revision, as `commit` would make it. `keys`
   * are never steering keys (they are a tool's `<tool>.result` and `trellis.last_tool_results`),
   * so the level's `steered` mark stays as it was.
   */
  commitTurnValues(turn: ContextLevel, values: Readonly<Record<string, unknown>>, keys: readonly string[]): void {
    turn.assignUnsteered(values);
    const revision = ++this.revision;
    // By index: `keys` is a frozen array, which `for…of` walks through the generic iterator.
    for (let index = 0; index < keys.length; index++) this.writtenAt.set(keys[index]!, revision);
    if (this.events?.observed)
      this.events.emit({ type: 'state.committed', sessionId: this.sessionId, revision, keys: [...keys] });
  }

  /** Host writes (`app.*`, restored state): no ownership checks, one revision. */
  seed(values: Readonly<Record<string, unknown>>): void {
    if (Object.keys(values).length === 0) return;
    this.session.values = { ...this.session.values, ...values };
    this.revision++;
  }

  /** Host writes that replace: drops the keys `drop` matches, then sets `values` (kept as the level's object when nothing else stays: the caller hands it over); one revision. */
  replace(drop: (key: string) => boolean, values: Readonly<Record<string, unknown>>): void {
    const current = this.session.values;
    let next: Record<string, unknown> | undefined;
    // A session with no values yet (a new one) takes the object as it is: nothing to keep.
    for (const key in current) {
      if (!Object.prototype.hasOwnProperty.call(current, key)) continue;
      if (!drop(key)) (next ??= {})[key] = current[key];
    }
    this.session.values = next === undefined ? values : Object.assign(next, values);
    this.revision++;
  }

  /** Puts back session values saved before a turn that was cancelled or failed: nothing half-written stays. */
  restore(values: Readonly<Record<string, unknown>>): void {
    if (this.session.values === values) return;
    this.session.values = values;
    this.revision++;
  }

  /** Removes keys from the session level (a plugin's keys on uninstall). */
  clear(keys: readonly string[]): void {
    const next = { ...this.session.values };
    let changed = false;
    for (const key of keys)
      if (key in next) {
        delete next[key];
        changed = true;
      }
    if (changed) {
      this.session.values = next;
      this.revision++;
    }
  }

  private validate(command: StateCommand, schema: StateSchema): void {
    for (const action of command.actions) {
      if (!schema.actionHandler(action.type)) {
        throw new TrellisError(
          'UnknownAction',
          `${action.by} scheduled action '${action.type}', which no installed plugin handles`,
          {
            hint: 'Install the plugin that declares @OnAction for it, or fix the action name',
            details: { action: action.type },
          },
        );
      }
    }
    for (const effect of command.effects) {
      if (!schema.effectHandlers(effect.type)) {
        throw new TrellisError(
          'UnknownEffect',
          `${effect.by} emitted effect '${effect.type}', which no installed plugin handles`,
          {
            hint: 'Install the plugin that declares @OnEffect for it, or fix the effect name',
            details: { effect: effect.type },
          },
        );
      }
    }
    for (const write of command.writes) {
      if (!write.exclusive || write.level === 'execution') continue;
      const at = this.writtenAt.get(write.key);
      if (at !== undefined && at > command.baseRevision) {
        throw new TrellisError(
          'StaleState',
          `The write of '${write.key}' was built on revision ${command.baseRevision}, but the key changed at revision ${at}`,
          {
            hint: 'Read the key again and rebuild the command (the engine re-runs hooks for you at parallel points)',
            details: { key: write.key, baseRevision: command.baseRevision, revision: at },
          },
        );
      }
    }
  }
}

function apply(target: Record<string, unknown>, write: StateWrite): void {
  if (write.fn) {
    const previous = target[write.key];
    target[write.key] = write.fn(previous === undefined ? write.fallback : previous);
  } else {
    target[write.key] = write.value;
  }
}

function requireLevel(level: ContextLevel | undefined, write: StateWrite): ContextLevel {
  if (level) return level;
  throw new TrellisError(
    'UnknownStateKey',
    `'${write.key}' is a ${write.level}-level key, but it was written where no ${write.level} is running`,
    {
      hint: `Write ${write.level}-level keys from inside a ${write.level}, or declare the key with another scope`,
    },
  );
}
