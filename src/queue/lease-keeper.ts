import { TrellisError } from '../../index.js';
import type { TurnStore } from './turn-store.js';

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

  /** Takes the lease; false when another holder has it. */
  async acquire(): Promise<boolean> {
    if (!(await this.store.acquireLease(this.key, this.holder, this.ttlMs))) return false;
    this.timer = setInterval(() => void this.renew(), Math.max(1, Math.floor(this.ttlMs / 3)));
    return true;
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
      new TrellisError('SessionBusy', `The queue lease "${this.key}" was lost: the turn ran past its lease and another worker took it over`, {
        hint: 'The job is retried; raise leaseTtlMs if turns stall this long',
        retryable: true,
      }),
    );
  }
}
