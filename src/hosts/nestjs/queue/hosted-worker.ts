import { setTimeout as sleep } from 'node:timers/promises';
import { TrellisError, type Agent } from '../../../../index.js';
import type { TrellisWorker } from '../../../../queue.js';
import type { QueueSettings } from './queue-options.js';

/**
 * A `TrellisWorker` inside a Nest app (the `worker` option): it runs queued turns with the
 * module's own Trellis app, so with the same plugins, `forFeature` ones included.
 * Started once the app has started; closed on shutdown, waiting a bounded time for the
 * jobs it is running.
 */
export class HostedWorker {
  #worker: TrellisWorker | undefined;

  constructor(
    private readonly settings: NonNullable<QueueSettings['worker']>,
    private readonly store: QueueSettings['store'],
    private readonly agents: ReadonlyMap<string, Agent>,
  ) {}

  /** The worker's id, as job results and lease holders name it (once started). */
  get id(): string | undefined {
    return this.#worker?.id;
  }

  async start(): Promise<void> {
    const { TrellisWorker } = await import('../../../../queue.js');
    const worker = new TrellisWorker({ ...this.settings, store: this.store, agent: (name) => this.agent(name) });
    await worker.start();
    this.#worker = worker;
  }

  /**
   * Stops taking jobs and waits up to `timeoutMs` for the running ones. Returns false when
   * some were still running then: the app stops under them, and BullMQ's stalled-job check
   * hands them to another worker, which continues from the session's last checkpoint.
   */
  async close(timeoutMs: number): Promise<boolean> {
    const worker = this.#worker;
    this.#worker = undefined;
    if (!worker) return true;
    const timer = new AbortController();
    // A failing close (Redis gone) leaves nothing to wait for.
    const closed = worker.close().then(
      () => true,
      () => true,
    );
    const inTime = await Promise.race([closed, sleep(timeoutMs, false, { signal: timer.signal }).catch(() => false)]);
    timer.abort();
    return inTime;
  }

  private agent(name: string): Agent {
    const agent = this.agents.get(name);
    if (agent) return agent;
    throw new TrellisError('UnknownAgent', `This worker's TrellisModule has no agent named '${name}'`, {
      hint: `Configured: ${[...this.agents.keys()].join(', ') || 'none'}. Build the worker's app from the same agents as the app that queued the turn`,
    });
  }
}
