import { TrellisError, type SessionStore, type TrellisErrorCode } from '../../../index.js';
import { parseSuspension } from '../../../host.js';
import { toJsonData } from './event-codec.js';
import { turnResultOf, type JobResult, type PublishedOutcome } from './turn-job-result.js';
import type { TurnJobData } from './turn-request.js';

/** How long a caller waits for a queued turn's result by default: 5 minutes. */
export const DEFAULT_WAIT_MS = 300_000;

/** What a caller's wait needs of the session store the workers write: loads (`PostgresStore`, `SqliteStore`, `MemoryStore` all fit). */
export type LandedTurnStore = Pick<SessionStore, 'load'>;

/** What Redis says of a job now. */
export type JobProbe =
  | { readonly kind: 'finished'; readonly outcome: PublishedOutcome }
  | { readonly kind: 'pending' }
  /** Redis answered and has no such job: it was lost (a restart without persistence), or removed. */
  | { readonly kind: 'missing' }
  /** Redis did not answer in time. */
  | { readonly kind: 'unreachable' };

/** What {@link TurnWait} is given by its queue. */
export interface TurnWaitOptions {
  readonly jobId: string;
  readonly data: TurnJobData;
  /** The caller's bound on the wait, in ms. */
  readonly waitMs: number;
  /** How often the job is read from Redis (and, when Redis has lost it or does not answer, the store). */
  readonly pollMs: number;
  /** Where the workers' checkpoints land; without it a lost job can only time out. */
  readonly store: LandedTurnStore | undefined;
  /** Reads the job from Redis. */
  readonly probe: () => Promise<JobProbe>;
}

/**
 * A BullMQ error a worker reports when Redis no longer has the job's hash (`Missing key for
 * job …`, after a restart without persistence): the job is gone, nothing runs it again.
 */
const MISSING_KEY = /Missing key for job/;

/**
 * Errors of an attempt that lost its job to another holder (a worker paused past its lock or
 * lease, whose turn another worker went on with): not the turn's outcome, the other holder's is.
 */
const NOT_THE_OUTCOME = /Missing lock for job/;

/**
 * A caller's wait for one queued turn: the result a worker publishes (or the job records), and
 * when Redis has lost the job or does not answer, the turn as it landed in the session store
 * (known by its job id: the key its send ran under). Never longer than `waitMs`: then a clear
 * error, `QueuedTurnLost` (Redis has no such job and the store no such turn) or
 * `QueuedTurnTimeout` (the job is still queued or running).
 */
export class TurnWait<R extends JobResult> {
  /** Settles once: the result, or a TrellisError. */
  readonly result: Promise<R>;
  private resolve!: (value: R) => void;
  private reject!: (error: unknown) => void;
  private settled = false;
  private readonly poll: NodeJS.Timeout;
  private readonly deadline: NodeJS.Timeout;
  private probing = false;
  /** Redis answered without the job at the last read. */
  private missing = false;
  private readonly started = Date.now();

  constructor(private readonly options: TurnWaitOptions) {
    this.result = new Promise<R>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
    this.poll = setInterval(() => void this.tick(), options.pollMs);
    this.deadline = setTimeout(() => void this.expire(), options.waitMs);
  }

  /** A job queued before this caller may be done already: read it now. */
  readNow(): void {
    void this.tick();
  }

  /** An outcome heard on the job's result channel (or read from the job). */
  heard(outcome: PublishedOutcome): void {
    if (this.settled) return;
    if (outcome.ok) return this.settle(() => this.resolve(outcome.value as R));
    const { code, message } = outcome.error;
    // A paused worker's attempt, fenced: the worker that took the job over answers.
    if (code === 'LeaseLost' || NOT_THE_OUTCOME.test(message)) return;
    if (MISSING_KEY.test(message)) {
      // The worker lost the job with Redis: the turn may have landed before; otherwise nothing runs it.
      this.missing = true;
      void this.fromStore().then((landed) => {
        if (landed) this.settle(() => this.resolve(landed));
        else if (!this.settled) this.settle(() => this.reject(this.lost()));
      });
      return;
    }
    // The job id names the kind, so its result is of the kind this caller queued.
    this.settle(() => this.reject(new TrellisError(code as TrellisErrorCode, message, { kind: 'system' })));
  }

  /** Ends the wait with `error` (the queue was closed). */
  abandon(error: TrellisError): void {
    this.settle(() => this.reject(error));
  }

  private settle(how: () => void): void {
    if (this.settled) return;
    this.settled = true;
    clearInterval(this.poll);
    clearTimeout(this.deadline);
    how();
  }

  private async tick(): Promise<void> {
    if (this.settled || this.probing) return;
    this.probing = true;
    try {
      const probe = await within(
        this.options.pollMs,
        this.options.probe().catch((): JobProbe => ({ kind: 'unreachable' })),
      );
      const state = probe ?? { kind: 'unreachable' };
      if (state.kind === 'finished') return this.heard(state.outcome);
      this.missing = state.kind === 'missing';
      if (state.kind === 'pending') return;
      // Redis lost the job or does not answer: the turn may have landed meanwhile.
      const landed = await this.fromStore();
      if (landed) this.settle(() => this.resolve(landed));
    } finally {
      this.probing = false;
    }
  }

  private async expire(): Promise<void> {
    if (this.settled) return;
    const landed = await within(5_000, this.fromStore());
    if (landed) return this.settle(() => this.resolve(landed));
    this.settle(() => this.reject(this.missing ? this.lost() : this.timedOut()));
  }

  private lost(): TrellisError {
    const { jobId, data } = this.options;
    return new TrellisError(
      'QueuedTurnLost',
      `Redis lost queued turn ${jobId} (restarted without persistence, or the job was removed), and ${this.options.store ? 'the session store has no such turn' : 'this queue has no store to look for it in'}: no worker will run it`,
      {
        hint: `${this.again()}. Keep Redis persistent (appendonly yes) so jobs outlive a restart${this.options.store ? '' : "; give TurnQueue the workers' store ({ store }) so a landed turn is found"}`,
        kind: 'system',
        retryable: true,
        details: { jobId, sessionId: data.sessionId, waitedMs: Date.now() - this.started },
      },
    );
  }

  private timedOut(): TrellisError {
    const { jobId, data, waitMs } = this.options;
    return new TrellisError(
      'QueuedTurnTimeout',
      `Queued turn ${jobId} gave no result within ${waitMs} ms (waitMs); it is still queued or running on a worker`,
      {
        hint: `${this.again()}; or read its outcome later from session ${data.sessionId}. Raise waitMs for longer turns`,
        kind: 'system',
        retryable: true,
        details: { jobId, sessionId: data.sessionId, waitMs },
      },
    );
  }

  /** What the caller may do again: a send, enqueue it under its key; decisions, only on calls still waiting. */
  private again(): string {
    const { data } = this.options;
    if (data.kind === 'send')
      return `Enqueue it again with the same key (${data.key}): it runs at most once, and a turn that landed meanwhile is answered from the store`;
    return `Read the session's waiting calls (session.pending()) and ${data.kind === 'resume' ? 'decide again only on calls still waiting' : 'cancel again if a turn still waits'}, with the same key (${data.key})`;
  }

  /** The job's result rebuilt from the session store, when its turn landed there; undefined when not (or the store fails). */
  private async fromStore(): Promise<R | undefined> {
    const store = this.options.store;
    if (!store) return undefined;
    try {
      return landedResult(this.options.jobId, this.options.data, await store.load(this.options.data.sessionId)) as
        R | undefined;
    } catch {
      return undefined;
    }
  }
}

type Stored = Awaited<ReturnType<SessionStore['load']>>;

/**
 * What a job came to, read from its session as the store holds it, when it landed: a send by
 * the turn recorded under the job's id (its key; never by its text); a resume by a session
 * that waits on none of the calls it decided, with no turn running; a cancel by a session
 * that waits on nothing, with no turn running. Undefined when it has not landed.
 */
export function landedResult(jobId: string, data: TurnJobData, stored: Stored): JobResult | undefined {
  if (!stored) return undefined;
  const running = stored.steps !== undefined && stored.steps.length > 0;
  const pending = parseSuspension(stored.suspension, data.sessionId)?.pending ?? [];
  const base = { jobId, sessionId: data.sessionId, recovered: true, worker: '' } as const;
  if (data.kind === 'cancel') {
    if (running || pending.length > 0) return undefined;
    return { ...base, kind: 'cancel', cancelled: stored.turns.at(-1)?.status === 'cancelled' };
  }
  if (data.kind === 'send') {
    const record = stored.turns.find((t) => t.key === jobId);
    if (!record) return undefined;
    // A suspended turn lists what it waits on only while it is the session's last.
    return {
      ...base,
      kind: 'send',
      result: toJsonData(turnResultOf(record, record === stored.turns.at(-1) ? pending : [])),
    };
  }
  const record = stored.turns.at(-1);
  if (!record || running || pending.some((p) => data.decisions.some((d) => d.callId === p.callId))) return undefined;
  return { ...base, kind: 'resume', result: toJsonData(turnResultOf(record, pending)) };
}

/** `work`'s value, or undefined when it takes longer than `ms`. */
async function within<T>(ms: number, work: Promise<T>): Promise<T | undefined> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      work,
      new Promise<undefined>((resolve) => (timer = setTimeout(() => resolve(undefined), ms))),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * A failed job's error as its worker published it: the worker fails a job with `<code>: <message>`
 * (`TurnJobRunner.failure`), so a caller that reads the job instead of the published outcome
 * (Redis lost the message) gets the same code; anything else is `QueuedTurnFailed`.
 */
export function failedJobError(reason: string | undefined): { code: string; message: string } {
  const coded = /^([A-Z][A-Za-z]{2,40}): ([\s\S]*)$/.exec(reason ?? '');
  return coded?.[1] !== undefined && coded[2] !== undefined
    ? { code: coded[1], message: coded[2] }
    : { code: 'QueuedTurnFailed', message: reason ?? 'the job failed' };
}
