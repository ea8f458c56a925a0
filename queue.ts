/**
 * Scale-out on Redis: `import { TurnQueue, TrellisWorker } from 'trellis/queue'`. A host of
 * the kernel, kept out of the root entry so that apps on the embedded default do not load
 * BullMQ. See docs/scaling.md.
 */
export {
  TurnQueue,
  type TurnQueueOptions,
  type WaitOptions,
  type QueuedTurn,
  type CancelledTurn,
  type CurrentTurn,
} from './src/hosts/queue/turn-queue.js';
export type { LandedTurnStore } from './src/hosts/queue/turn-wait.js';
export type { QueueErasure } from './src/hosts/queue/queue-erasure.js';
export type { ParkedTurn } from './src/hosts/queue/parked-turns.js';
export type { DoubleTextPolicy } from './src/hosts/queue/session-order.js';
export { TrellisWorker, type TrellisWorkerOptions } from './src/hosts/queue/trellis-worker.js';
export type { QueuedEvent, QueuedEventMeta } from './src/hosts/queue/queued-event.js';
export type { WatchOptions } from './src/hosts/queue/session-event-reader.js';
export type { EventRetention } from './src/hosts/queue/event-stream-writer.js';
export type { AgentResolver } from './src/hosts/queue/turn-job-runner.js';
export type { QueueConnectionOptions } from './src/hosts/queue/queue-connection.js';
export type { TurnJobResult, CancelJobResult } from './src/hosts/queue/turn-job-result.js';
export type { SendRequest, ResumeRequest, CancelRequest } from './src/hosts/queue/turn-request.js';
export { jobIdOf } from './src/hosts/queue/turn-request.js';
export type { TurnStore } from './src/hosts/queue/turn-store.js';
