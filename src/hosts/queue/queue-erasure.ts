import type { Queue } from 'bullmq';
import type { Redis } from 'ioredis';
import { TrellisError } from '../../../index.js';
import type { EraseRequest } from '../../../governance.js';
import { whenReachable, type QueueNames } from './queue-connection.js';
import { jobIdOf, type TurnJobKind } from './turn-request.js';

/** What erasing sessions did in a turn queue's Redis. */
export interface QueueErasure {
  /** Jobs removed (their data, result, logs and place in BullMQ's lists). */
  readonly jobs: number;
  /** Entries of BullMQ's event stream removed (a finished job's `completed` entry holds its result). */
  readonly events: number;
  /** Other keys removed: the sessions' turn-order lists, cancel markers, event streams and reader marks; and their parked turns (each counts one). */
  readonly keys: number;
}

const KINDS: readonly TurnJobKind[] = ['send', 'resume', 'cancel'];
const PAGE = 1000;

/**
 * Removes from a turn queue's Redis everything it keeps of some sessions' turns: each job
 * (queued, delayed, finished or failed: its data holds the message and host context, its result
 * the reply), the entries of BullMQ's event stream naming those jobs, and the sessions' order
 * lists and cancel markers. Jobs are found by their ids (which name the session) and, for a
 * user's or tenant's erasure, by the `app.user_id` / `app.tenant` context in their data, so a
 * queued first turn whose session was never stored goes too. Pub/sub messages (events, results)
 * are not stored by Redis.
 *
 * @throws TrellisError `SessionBusy` when a worker runs one of the jobs now (nothing is removed
 *   then: erase again once it finished, or stop it with `TurnQueue.cancel`); `StoreUnavailable`.
 */
export async function eraseQueuedTurns(
  names: QueueNames,
  queue: Queue,
  redis: Redis,
  request: EraseRequest,
): Promise<QueueErasure> {
  await whenReachable(names, 'erase sessions from the turn queue', () =>
    Promise.all([queue.waitUntilReady(), redis.ping()]),
  );
  try {
    return await erase(names, queue, redis, request);
  } catch (error) {
    if (TrellisError.is(error)) throw error;
    throw new TrellisError(
      'StoreUnavailable',
      `Cannot erase sessions from the turn queue: Redis at ${new URL(names.url).host}: ${error instanceof Error ? error.message : String(error)}`,
      { kind: 'system', retryable: true, cause: error },
    );
  }
}

async function erase(names: QueueNames, queue: Queue, redis: Redis, request: EraseRequest): Promise<QueueErasure> {
  const base = `${names.prefix}:${names.queueName}:`;
  const sessions = new Set(request.sessionIds);
  // A user's or tenant's jobs, whatever their session: their data names them.
  const users = new Set(request.userIds);
  const tenant = request.selector.tenant;
  if (users.size > 0 || tenant !== undefined) {
    for (const key of await scanKeys(redis, `${base}*`, 'hash')) {
      if (key.slice(base.length).includes(':')) continue;
      const data = parseData(await redis.hget(key, 'data'));
      const context = data?.context ?? {};
      if (
        (typeof context['app.user_id'] === 'string' && users.has(context['app.user_id'])) ||
        (tenant !== undefined && context['app.tenant'] === tenant)
      ) {
        if (typeof data?.sessionId === 'string') sessions.add(data.sessionId);
      }
    }
  }
  const jobs = new Set<string>();
  for (const sessionId of sessions) {
    for (const kind of KINDS) {
      for (const key of await scanKeys(redis, `${base}${globEscape(jobIdOf(kind, sessionId, ''))}*`))
        jobs.add(key.slice(base.length).split(':')[0]!);
    }
  }
  const running = [];
  for (const jobId of jobs) if ((await queue.getJobState(jobId)) === 'active') running.push(jobId);
  if (running.length > 0) throw busy(running);
  let removed = 0;
  for (const jobId of jobs) {
    if ((await queue.remove(jobId)) === 1) removed++;
    else if ((await queue.getJobState(jobId)) !== 'unknown') throw busy([jobId]);
  }
  const events = await dropEvents(redis, `${base}events`, jobs);
  // What BullMQ's remove leaves (none expected), the order lists and the cancel markers.
  const leftover = new Set<string>();
  for (const jobId of jobs) {
    for (const key of await scanKeys(redis, `${base}${globEscape(jobId)}*`)) leftover.add(key);
    leftover.add(`${base}cancelled:${jobId}`);
  }
  for (const sessionId of sessions) {
    leftover.add(`${base}order:${sessionId}`);
    // The session's kept events (its Redis Stream, which holds messages and tool arguments) and its reader mark.
    leftover.add(names.eventStream(sessionId));
    leftover.add(names.readerKey(sessionId));
  }
  const keys = leftover.size > 0 ? await redis.del(...leftover) : 0;
  // Parked turns (poison) keep their job's data — the message and host context — until an operator acts.
  const parked = Object.entries(await redis.hgetall(names.parkedKey()))
    .filter(([, text]) => {
      const data = (
        parseData(text) as { data?: { sessionId?: unknown; context?: Record<string, unknown> } } | undefined
      )?.data;
      const context = data?.context ?? {};
      return (
        (typeof data?.sessionId === 'string' && sessions.has(data.sessionId)) ||
        (typeof context['app.user_id'] === 'string' && users.has(context['app.user_id'])) ||
        (tenant !== undefined && context['app.tenant'] === tenant)
      );
    })
    .map(([jobId]) => jobId);
  const unparked = parked.length > 0 ? await redis.hdel(names.parkedKey(), ...parked) : 0;
  return { jobs: removed, events, keys: keys + unparked };
}

/** Removes the stream entries that name one of `jobs`, in pages; how many went. */
async function dropEvents(redis: Redis, stream: string, jobs: ReadonlySet<string>): Promise<number> {
  if (jobs.size === 0) return 0;
  let dropped = 0;
  let from = '-';
  for (;;) {
    const page = await redis.xrange(stream, from, '+', 'COUNT', PAGE);
    const doomed = page.filter(([, fields]) => namesJob(fields, jobs)).map(([id]) => id);
    if (doomed.length > 0) dropped += await redis.xdel(stream, ...doomed);
    if (page.length < PAGE) return dropped;
    from = `(${page.at(-1)![0]}`;
  }
}

/** Whether a stream entry's fields (`[name, value, …]`) name one of the jobs. */
function namesJob(fields: readonly string[], jobs: ReadonlySet<string>): boolean {
  for (let i = 0; i + 1 < fields.length; i += 2) if (fields[i] === 'jobId' && jobs.has(fields[i + 1]!)) return true;
  return false;
}

async function scanKeys(redis: Redis, pattern: string, type?: 'hash'): Promise<string[]> {
  const keys: string[] = [];
  let cursor = '0';
  do {
    const [next, page] =
      type === undefined
        ? await redis.scan(cursor, 'MATCH', pattern, 'COUNT', PAGE)
        : await redis.scan(cursor, 'MATCH', pattern, 'COUNT', PAGE, 'TYPE', type);
    cursor = next;
    keys.push(...page);
  } while (cursor !== '0');
  return keys;
}

/** A literal in a Redis `MATCH` pattern (job ids keep `*` and `(`… unencoded; `?`, `[`, `]` and `\` are encoded). */
function globEscape(text: string): string {
  return text.replace(/[*?[\]\\]/g, (c) => `\\${c}`);
}

function parseData(text: string | null): { sessionId?: unknown; context?: Record<string, unknown> } | undefined {
  if (text === null) return undefined;
  try {
    const data = JSON.parse(text) as unknown;
    return typeof data === 'object' && data !== null ? data : undefined;
  } catch {
    return undefined;
  }
}

function busy(jobs: readonly string[]): TrellisError {
  return new TrellisError(
    'SessionBusy',
    `Cannot erase yet: a worker is running ${jobs.length === 1 ? 'the job' : 'the jobs'} ${jobs.join(', ')} of these sessions now`,
    {
      hint: 'Erase again once the turn finished, or stop it first with TurnQueue.cancel(sessionId); no session was deleted from the store',
      retryable: true,
      details: { jobs },
    },
  );
}
