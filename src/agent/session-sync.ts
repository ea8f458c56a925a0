import { TrellisError } from '../errors/trellis-error.js';
import type { ChatMessage } from '../models/model-provider.js';
import { canReadRevision, type SessionStore, type StoredSession } from '../stores/session-store.js';
import type { AgentBinding, SessionHost } from './session-host.js';
import type { SuspensionRecord } from './suspension-record.js';
import { persistentValues, turnRecord, withoutHostContext, type TurnStart } from './turn-record.js';
import type { HeldLease } from './session-lease.js';
import type { TurnEnd } from './turn-runner.js';

/**
 * A session's copy of what the store holds — transcript, turn count, revision and the open
 * suspension — kept in step with it: loaded on first use, reloaded when another process
 * checkpointed since, and advanced by one atomic checkpoint per turn.
 */
export class SessionSync {
  history: ChatMessage[] = [];
  turns = 0;
  suspension: unknown = null;
  #revision = 0;
  #loading: Promise<void> | undefined;
  /** The lease the session's running work holds (see {@link holding}). */
  #lease: HeldLease | undefined;

  constructor(
    private readonly host: SessionHost,
    private readonly agent: AgentBinding,
    readonly id: string,
  ) {}

  /**
   * Loads the session on first use (then calls `opened` with whether it existed);
   * afterwards, reloads it if the store moved on. Returns nothing when there was nothing to
   * wait for (no store to read, and `opened` did not wait).
   */
  ready(opened: (resumed: boolean) => void | Promise<void>): void | Promise<void> {
    const loading = this.#loading;
    if (loading === undefined) {
      const load = this.#load(opened);
      if (load === undefined) {
        this.#loading = LOADED;
        return undefined;
      }
      this.#loading = load;
      load.catch(() => (this.#loading = undefined));
      return load;
    }
    if (loading === LOADED) return this.#refresh();
    return loading.then(() => this.#refresh());
  }

  /** Forgets the loaded copy: the next `ready()` loads again. */
  invalidate(): void {
    this.#loading = undefined;
  }

  /**
   * Writes a turn's end in one atomic checkpoint, then takes its messages into the
   * transcript. Without a store there is nothing to wait for: it returns nothing.
   */
  checkpoint(turnIndex: number, input: string, end: TurnEnd, startedAt: TurnStart, sessionValues: Readonly<Record<string, unknown>>, last = false): Promise<void> | undefined {
    const store = this.host.store;
    if (!store) return this.#advance(turnIndex, end);
    return this.#save(store, turnIndex, input, end, startedAt, sessionValues, last);
  }

  /**
   * Runs `work` holding `lease`: the turn's `last` checkpoint gives it up in the same write
   * when the store `releasesLeaseOnCheckpoint` (nothing of the work writes after it).
   */
  async holding<T>(lease: HeldLease, work: () => Promise<T>): Promise<T> {
    this.#lease = lease;
    try {
      return await work();
    } finally {
      this.#lease = undefined;
    }
  }

  async #save(store: SessionStore, turnIndex: number, input: string, end: TurnEnd, startedAt: TurnStart, sessionValues: Readonly<Record<string, unknown>>, last: boolean): Promise<void> {
    const lease = last && store.releasesLeaseOnCheckpoint === true ? this.#lease : undefined;
    this.#revision = await store.checkpoint({
      sessionId: this.id,
      agent: this.agent.spec.name,
      expectedRevision: this.#revision,
      state: persistentValues(sessionValues, this.host.registry),
      append: end.append,
      turn: turnRecord(turnIndex, input, end.result, startedAt),
      suspension: end.suspension ?? null,
      ...(lease && { releaseLease: lease.holder }),
    });
    // Written, so the lease is given up: the work's end does not release it again.
    if (lease) lease.released = true;
    this.#advance(turnIndex, end);
  }

  /** Takes a saved turn's messages into the transcript. */
  #advance(turnIndex: number, end: TurnEnd): undefined {
    for (const message of end.append) this.history.push(message);
    this.suspension = end.suspension ?? null;
    this.turns = Math.max(this.turns, turnIndex + 1);
    return undefined;
  }

  #load(opened: (resumed: boolean) => void | Promise<void>): Promise<void> | undefined {
    const store = this.host.store;
    if (!store) {
      const opening = opened(false);
      return opening instanceof Promise ? opening : undefined;
    }
    return store.load(this.id).then((stored) => {
      if (stored) {
        if (stored.agent !== this.agent.spec.name) {
          throw new TrellisError('SessionNotFound', `Session '${this.id}' belongs to agent '${stored.agent}', not '${this.agent.spec.name}'`, {
            hint: 'Open it through the agent that created it, or use another session id',
          });
        }
        this.#restore(stored);
      }
      return opened(stored !== undefined);
    });
  }

  #restore(stored: StoredSession): void {
    this.history = [...stored.transcript];
    this.turns = stored.turns.reduce((n, t) => Math.max(n, t.index + 1), 0);
    this.#revision = stored.revision;
    this.suspension = stored.suspension ?? null;
    this.host.sessionState(this.id).seed(withoutHostContext(stored.state));
  }

  /**
   * Another process may have checkpointed this session since it was loaded here: reload it
   * before a turn rather than run the turn and fail with `StaleState` when saving it.
   */
  #refresh(): Promise<void> | undefined {
    const store = this.host.store;
    if (!store || !canReadRevision(store)) return undefined;
    return store.revision(this.id).then(async (revision) => {
      if (revision === undefined || revision === this.#revision) return;
      const stored = await store.load(this.id);
      if (stored) this.#restore(stored);
    });
  }
}

/** `#loading` once the session was loaded with nothing to wait for. */
const LOADED: Promise<void> = Promise.resolve();
