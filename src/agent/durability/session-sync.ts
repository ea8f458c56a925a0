import { TrellisError } from '../../errors/trellis-error.js';
import type { ChatMessage } from '../../contract/model-provider.js';
import {
  canReadRevision,
  type SessionStore,
  type StoredSession,
  type TurnRecord,
} from '../../engine/stores/session-store.js';
import { canLoadSince, type SessionDeltaReader } from '../../engine/stores/session-delta.js';
import { canJournalSteps } from '../../engine/stores/step-journal.js';
import type { AgentBinding, SessionHost } from '../session-host.js';
import { persistentValues, turnRecord, withoutHostContext, withSubject, type TurnStart } from './turn-record.js';
import { leasesOf, type HeldLease } from './session-lease.js';
import type { TurnEnd } from '../turn/turn-runner.js';
import type { AuditEntry } from '../../engine/stores/audit-log.js';

/**
 * A session's copy of what the store holds — transcript, turn count, revision, the open
 * suspension, and the step journal of a turn a crash cut off — kept in step with it: loaded
 * on first use, reloaded when another process wrote since, advanced by each step a turn
 * journals and by one atomic checkpoint per turn. Its writes to the store go one after
 * another, each on the revision the one before left.
 */
export class SessionSync {
  history: ChatMessage[] = [];
  turns = 0;
  suspension: unknown = null;
  /** The steps of a turn that was running when its process stopped (`StoredSession.steps`), until a turn goes on with them. */
  steps: readonly unknown[] | undefined;
  /** A step write of the running turn failed: the store and this copy may disagree, so nothing more is written. */
  broken: unknown;
  #revision = 0;
  /** When the stored session this copy holds was created, once the store said (a load or a catch-up). */
  #createdAt: string | undefined;
  /** The turns recorded under a key (`SendOptions.key`), by key. */
  readonly #keyed = new Map<string, TurnRecord>();
  /** Step writes not settled yet (a checkpoint waits for them). */
  #writes: Promise<void> | undefined;
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

  /** Whether the store keeps a step journal (the running turn's steps are then journalled). */
  get journals(): boolean {
    return canJournalSteps(this.host.store);
  }

  /** The record of the turn that ran under `key`, if this session has one. */
  recorded(key: string): TurnRecord | undefined {
    return this.#keyed.get(key);
  }

  /**
   * Appends steps of the running turn to the store's journal, after the writes before it and
   * on the revision they left, fenced by the turn's lease. A failed write marks the copy
   * `broken` (and forgets it, so the next use reloads): the turn must stop, and stays in the
   * store for whoever goes on with it.
   */
  appendSteps(steps: readonly unknown[]): Promise<void> {
    const store = this.host.store;
    if (!canJournalSteps(store)) return Promise.resolve();
    const write = (): Promise<void> =>
      store
        .appendSteps({
          sessionId: this.id,
          agent: this.agent.spec.name,
          expectedRevision: this.#revision,
          steps,
          ...(this.#lease && { fence: this.#lease.holder }),
        })
        .then((revision) => {
          this.#revision = revision;
        });
    const previous = this.#writes;
    const writing = (previous === undefined ? write() : previous.then(write)).catch((error: unknown) => {
      this.broken ??= error;
      this.invalidate();
      throw error;
    });
    const settled = writing.then(
      () => {
        if (this.#writes === settled) this.#writes = undefined;
      },
      () => {
        if (this.#writes === settled) this.#writes = undefined;
      },
    );
    this.#writes = settled;
    return writing;
  }

  /** Before a tool runs: the lease the turn holds is still this process's (see `HeldLease.ensure`); undefined when nothing awaits. */
  ensureLease(): Promise<void> | undefined {
    return this.#lease?.ensure();
  }

  /**
   * Writes a turn's end in one atomic checkpoint, then takes its messages into the
   * transcript. Without a store there is nothing to wait for: it returns nothing.
   */
  checkpoint(
    turnIndex: number,
    input: string,
    end: TurnEnd,
    startedAt: TurnStart,
    sessionValues: Readonly<Record<string, unknown>>,
    last = false,
    key?: string,
    audit?: readonly AuditEntry[],
  ): Promise<void> | undefined {
    const store = this.host.store;
    if (!store)
      return this.#advance(
        turnIndex,
        end,
        key === undefined ? undefined : turnRecord(turnIndex, input, end.result, startedAt, key),
        key,
      );
    const writes = this.#writes;
    if (writes !== undefined)
      return writes.then(() => this.#save(store, turnIndex, input, end, startedAt, sessionValues, last, key, audit));
    return this.#save(store, turnIndex, input, end, startedAt, sessionValues, last, key, audit);
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

  /**
   * Gives up the lease the running work holds now, without waiting for the work (its process
   * is about to exit): its later writes are refused (`LeaseLost`), and nothing releases or
   * reports the lease again. False when no work holds one.
   */
  async abandonLease(): Promise<boolean> {
    const lease = this.#lease;
    const store = leasesOf(this.host.store);
    if (lease === undefined || lease.released || store === undefined) return false;
    lease.released = true;
    await store.releaseLease(this.id, lease.holder);
    return true;
  }

  async #save(
    store: SessionStore,
    turnIndex: number,
    input: string,
    end: TurnEnd,
    startedAt: TurnStart,
    sessionValues: Readonly<Record<string, unknown>>,
    last: boolean,
    key: string | undefined,
    audit: readonly AuditEntry[] | undefined,
  ): Promise<void> {
    const lease = last && store.releasesLeaseOnCheckpoint === true ? this.#lease : undefined;
    const record = turnRecord(turnIndex, input, end.result, startedAt, key);
    this.#revision = await store.checkpoint({
      sessionId: this.id,
      agent: this.agent.spec.name,
      expectedRevision: this.#revision,
      state: withSubject(persistentValues(sessionValues, this.host.registry), sessionValues),
      append: end.append,
      turn: record,
      suspension: end.suspension ?? null,
      // A store that journals steps fences its checkpoints too: a writer whose lease lapsed lands nothing.
      ...(this.#lease && canJournalSteps(store) && { fence: this.#lease.holder }),
      ...(lease && { releaseLease: lease.holder }),
      ...(audit !== undefined && audit.length > 0 && { audit }),
    });
    // Written, so the lease is given up: the work's end does not release it again.
    if (lease) lease.released = true;
    this.#advance(turnIndex, end, record, key);
  }

  /** Takes a saved turn's messages into the transcript; the turn's steps are over. */
  #advance(turnIndex: number, end: TurnEnd, record: TurnRecord | undefined, key: string | undefined): undefined {
    for (const message of end.append) this.history.push(message);
    this.suspension = end.suspension ?? null;
    this.steps = undefined;
    this.turns = Math.max(this.turns, turnIndex + 1);
    if (key !== undefined && record !== undefined) this.#keyed.set(key, record);
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
          throw new TrellisError(
            'SessionNotFound',
            `Session '${this.id}' belongs to agent '${stored.agent}', not '${this.agent.spec.name}'`,
            {
              hint: 'Open it through the agent that created it, or use another session id',
            },
          );
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
    this.#createdAt = stored.createdAt;
    // A turn that was running when its process stopped: its steps supersede the suspension it
    // may have resumed from (which its first step closed).
    this.steps = stored.steps !== undefined && stored.steps.length > 0 ? stored.steps : undefined;
    this.suspension = this.steps === undefined ? (stored.suspension ?? null) : null;
    this.broken = undefined;
    this.#keyed.clear();
    for (const turn of stored.turns) if (typeof turn.key === 'string') this.#keyed.set(turn.key, turn);
    this.host.sessionState(this.id).seed(withoutHostContext(stored.state));
  }

  /**
   * Another process may have checkpointed this session since it was loaded here: reload it
   * before a turn rather than run the turn and fail with `StaleState` when saving it.
   */
  #refresh(): Promise<void> | undefined {
    const store = this.host.store;
    if (canLoadSince(store)) return this.#catchUp(store);
    if (!store || !canReadRevision(store)) return undefined;
    return store.revision(this.id).then(async (revision) => {
      if (revision === undefined || revision === this.#revision) return;
      const stored = await store.load(this.id);
      if (stored) this.#restore(stored);
    });
  }

  /**
   * Like the revision check, in the same one read: when the store moved on, takes in only
   * what was added since this copy (new messages, the turns from its last on, state,
   * suspension, steps). A delta that does not line up with the copy (the store's transcript
   * is not this copy's plus the new messages) falls back to a whole load.
   */
  #catchUp(store: SessionStore & SessionDeltaReader): Promise<void> {
    const since = {
      revision: this.#revision,
      messages: this.history.length,
      turns: this.turns,
      ...(this.#createdAt !== undefined && { createdAt: this.#createdAt }),
    };
    return store.loadSince(this.id, since).then(async (delta) => {
      if (delta === undefined) return;
      if (delta.unchanged) {
        this.#createdAt ??= delta.createdAt;
        return;
      }
      const first = delta.turns[0];
      // The same session (not one erased and created again under its id), whose stored transcript is this copy's plus the new messages.
      const aligned =
        delta.agent === this.agent.spec.name &&
        (this.#createdAt === undefined || delta.createdAt === this.#createdAt) &&
        delta.revision > this.#revision &&
        delta.messageCount === this.history.length + delta.transcript.length &&
        (this.turns === 0 || first === undefined || first.index >= this.turns - 1);
      if (!aligned) {
        const stored = await store.load(this.id);
        if (stored) this.#restore(stored);
        return;
      }
      for (const message of delta.transcript) this.history.push(message);
      for (const turn of delta.turns) {
        this.turns = Math.max(this.turns, turn.index + 1);
        if (typeof turn.key === 'string') this.#keyed.set(turn.key, turn);
      }
      this.#revision = delta.revision;
      this.#createdAt = delta.createdAt;
      this.steps = delta.steps !== undefined && delta.steps.length > 0 ? delta.steps : undefined;
      this.suspension = this.steps === undefined ? (delta.suspension ?? null) : null;
      this.broken = undefined;
      this.host.sessionState(this.id).seed(withoutHostContext(delta.state));
    });
  }
}

/** `#loading` once the session was loaded with nothing to wait for. */
const LOADED: Promise<void> = Promise.resolve();
