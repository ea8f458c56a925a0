import type { Observable } from 'rxjs';
import { TrellisError, type Approver, type Decision, type TrellisEvent, type TurnResult } from '../../../index.js';
import type { TurnQueue } from '../../../queue.js';
import type { CliApp } from './cli-app.js';

/** What `--queue` turns need: the queue of the config, and the agent name workers know. */
export interface CliQueue {
  readonly agent: string;
  readonly queue: TurnQueue;
}

/** The config's `queue` as a {@link TurnQueue}; a clear error when the config has none. `trellis/queue` (BullMQ, ioredis) loads only here. */
export async function openCliQueue(cli: CliApp): Promise<CliQueue> {
  const queue = cli.config?.config.queue;
  if (!queue) {
    throw new TrellisError(
      'InvalidConfig',
      `No queue configured: ${cli.configFile !== undefined ? `${cli.configFile} has no \`queue\`` : 'there is no trellis.config here, so no `queue`'}`,
      {
        hint: 'Add "queue": "redis://127.0.0.1:6379" (and a postgres:// "store" shared with the workers) to trellis.config, and run `trellis worker`',
      },
    );
  }
  const { url, name, prefix } = typeof queue === 'string' ? { url: queue, name: undefined, prefix: undefined } : queue;
  const { TurnQueue } = await import('../../../queue.js');
  // The config's store is the workers': a wait whose job Redis lost finds the landed turn there.
  return { agent: cli.spec.name, queue: new TurnQueue({ url, queueName: name, prefix, store: cli.store }) };
}

/** A session as `printTurn` watches it when its turn runs on a worker: the id and the events fanned out over Redis. */
export function queuedSession(
  queue: CliQueue,
  sessionId: string,
): { readonly id: string; readonly events$: Observable<TrellisEvent> } {
  return { id: sessionId, events$: queue.queue.events$(sessionId) };
}

/** What a queued turn asks a worker to do. */
export type QueuedTurnRequest =
  | { readonly kind: 'send'; readonly message: string }
  | { readonly kind: 'resume'; readonly decisions: readonly Decision[]; readonly approver?: Approver };

/**
 * Enqueues one turn and waits for a worker's result. A worker runs it whatever happens
 * here: Ctrl-C stops the waiting, not the turn (`Cancelled`, naming where to look later).
 */
export async function runQueuedTurn(
  queue: CliQueue,
  sessionId: string,
  key: string,
  request: QueuedTurnRequest,
  context: Readonly<Record<string, unknown>>,
  signal: AbortSignal,
): Promise<TurnResult> {
  const base = { agent: queue.agent, sessionId, key, context: Object.keys(context).length > 0 ? context : undefined };
  const queued =
    request.kind === 'send'
      ? await queue.queue.enqueueSend({ ...base, message: request.message })
      : await queue.queue.enqueueResume({
          ...base,
          decisions: request.decisions,
          ...(request.approver !== undefined && { approver: request.approver }),
        });
  const stopped = new Promise<never>((_, reject) => {
    const stop = () =>
      reject(
        new TrellisError('Cancelled', `Stopped waiting for queued turn ${queued.jobId}; a worker still runs it`, {
          hint: `See its outcome later with: trellis sessions show ${sessionId}`,
        }),
      );
    if (signal.aborted) stop();
    else signal.addEventListener('abort', stop, { once: true });
  });
  queued.result.catch(() => undefined);
  return (await Promise.race([queued.result, stopped])).result;
}
