import { TrellisError } from '../../../index.js';
import { storedRevision, type TurnStore } from './turn-store.js';

/**
 * Holds a lease while a job runs: renews it every third of its ttl and aborts `signal`
 * when a renewal says the lease was lost (the holder stalled past the ttl and another
 * took over), so the turn stops instead of racing the new holder to the checkpoint.
 */
export class LeaseKeeper {
  private readonly controller = new AbortController();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly store: TurnStore,
    private readonly key: string,
    private readonly holder: string,
    private readonly ttlMs: number,
  ) {}

  /** Aborted when the lease is lost. */
  get signal(): AbortSignal {
    return this.controller.signal;
  }

  /**
   * Takes the lease and then reads the stored revision of `sessionId` (in one round trip where
   * the store can): the revision, or undefined when another holder has the lease.
   */
  async acquire(sessionId: string): Promise<number | undefined> {
    let revision: number | undefined;
    if (this.store.acquireLeaseReadingRevision)
      revision = await this.store.acquireLeaseReadingRevision(this.key, this.holder, this.ttlMs, sessionId);
    else if (await this.store.acquireLease(this.key, this.holder, this.ttlMs)) {
      // Taken: a failing read gives it back rather than leave it to lapse.
      revision = await storedRevision(this.store, sessionId).catch(async (error: unknown) => {
        await this.store.releaseLease(this.key, this.holder).catch(() => undefined);
        throw error;
      });
    }
    if (revision === undefined) return undefined;
    this.timer = setInterval(() => void this.renew(), Math.max(1, Math.floor(this.ttlMs / 3)));
    return revision;
  }

  async release(): Promise<void> {
    clearInterval(this.timer);
    await this.store.releaseLease(this.key, this.holder).catch(() => undefined);
  }

  private async renew(): Promise<void> {
    // A failing renewal (store down) is retried on the next tick; only "lost" aborts.
    const held = await this.store.renewLease(this.key, this.holder, this.ttlMs).catch(() => true);
    if (held || this.controller.signal.aborted) return;
    clearInterval(this.timer);
    this.controller.abort(
      new TrellisError(
        'SessionBusy',
        `The queue lease "${this.key}" was lost: the turn ran past its lease and another worker took it over`,
        {
          hint: 'The job is retried; raise leaseTtlMs if turns stall this long',
          retryable: true,
        },
      ),
    );
  }
}
