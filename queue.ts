/**
 * Scale-out on Redis: `import { TurnQueue, TrellisWorker } from 'trellis/queue'`. A host of
 * the kernel, kept out of the root entry so that apps on the embedded default do not load
 * BullMQ. See docs/scaling.md.
 */
export { TurnQueue, type TurnQueueOptions, type WaitOptions, type QueuedTurn, type CancelledTurn, type CurrentTurn } from './src/queue/turn-queue.js';
export type { LandedTurnStore } from './src/queue/turn-wait.js';
export type { QueueErasure } from './src/queue/queue-erasure.js';
export type { ParkedTurn } from './src/queue/parked-turns.js';
export type { DoubleTextPolicy } from './src/queue/session-order.js';
export { TrellisWorker, type TrellisWorkerOptions } from './src/queue/trellis-worker.js';
export type { QueuedEvent, QueuedEventMeta } from './src/queue/queued-event.js';
export type { WatchOptions } from './src/queue/session-event-reader.js';
export type { EventRetention } from './src/queue/event-stream-writer.js';
export type { AgentResolver } from './src/queue/turn-job-runner.js';
export type { QueueConnectionOptions } from './src/queue/queue-connection.js';
export type { TurnJobResult, CancelJobResult } from './src/queue/turn-job-result.js';
export type { SendRequest, ResumeRequest, CancelRequest } from './src/queue/turn-request.js';
export { jobIdOf } from './src/queue/turn-request.js';
export type { TurnStore } from './src/queue/turn-store.js';
