import type { Redis } from 'ioredis';
import type { QueueNames } from './queue-connection.js';
import type { TurnJobData, TurnJobKind } from './turn-request.js';

/**
 * A turn its workers could not get through: each worker that ran it died (or stalled past its
 * job lock) `crashes` times, so it was parked instead of run again (its caller got
 * `PoisonTurn`). It stays parked until an operator retries it (`TurnQueue.retryParked`,
 * `trellis queue retry <job id>`) or drops it (`TurnQueue.dropParked`).
 */
export interface ParkedTurn {
  readonly jobId: string;
  readonly kind: TurnJobKind;
  readonly agent: string;
  readonly sessionId: string;
  /** Times a worker died (or stalled) while running it. */
  readonly crashes: number;
  /** Why it was parked, as its caller's `PoisonTurn` error said. */
  readonly reason: string;
  /** When it was parked (ISO 8601). */
  readonly parkedAt: string;
}

/** What the parked hash keeps of a turn: what an operator sees, and the job's data to queue it again. */
interface ParkedEntry extends ParkedTurn {
  readonly data: TurnJobData;
}

/**
 * The turns parked as poison, in one Redis hash per queue (`<prefix>:<queue>:parked:turns`,
 * field = job id). Entries do not expire: a parked turn waits for an operator.
 */
export class ParkedTurns {
  constructor(
    private readonly names: QueueNames,
    private readonly redis: Redis,
  ) {}

  async park(entry: ParkedEntry): Promise<void> {
    await this.redis.hset(this.names.parkedKey(), entry.jobId, JSON.stringify(entry));
  }

  /** Every parked turn, oldest first (without the job's data: the message and host context). */
  async list(): Promise<ParkedTurn[]> {
    const entries = Object.values(await this.redis.hgetall(this.names.parkedKey())).flatMap(
      (text) => parseEntry(text) ?? [],
    );
    return entries
      .sort((a, b) => a.parkedAt.localeCompare(b.parkedAt) || a.jobId.localeCompare(b.jobId))
      .map(({ data: _data, ...turn }) => turn);
  }

  /** The parked turn `jobId` with its job's data; undefined when none is parked under that id. */
  async get(jobId: string): Promise<ParkedEntry | undefined> {
    return parseEntry(await this.redis.hget(this.names.parkedKey(), jobId));
  }

  /** Removes the entry; whether there was one. */
  async remove(jobId: string): Promise<boolean> {
    return (await this.redis.hdel(this.names.parkedKey(), jobId)) > 0;
  }
}

function parseEntry(text: string | null | undefined): ParkedEntry | undefined {
  if (typeof text !== 'string') return undefined;
  try {
    const entry = JSON.parse(text) as Partial<ParkedEntry>;
    return typeof entry.jobId === 'string' && typeof entry.data === 'object' && entry.data !== null
      ? (entry as ParkedEntry)
      : undefined;
  } catch {
    return undefined;
  }
}
