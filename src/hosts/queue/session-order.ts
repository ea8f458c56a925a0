import { createHash } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { QueueNames } from './queue-connection.js';

/**
 * What a send does when its session already has a turn running or queued (LangGraph's
 * "multitask strategies"): `enqueue` runs it after them, in the order the sends were
 * accepted; `reject` refuses it (`SessionBusy`); `interrupt` cancels them, keeping the
 * steps the running turn completed, and runs it; `rollback` cancels them and discards the
 * running turn's steps.
 */
export type DoubleTextPolicy = 'enqueue' | 'reject' | 'interrupt' | 'rollback';

export const DOUBLE_TEXT_POLICIES: readonly DoubleTextPolicy[] = ['enqueue', 'reject', 'interrupt', 'rollback'];

/** How long an entry whose job was never added (its enqueuer died in between) holds its session up. */
export const ORPHAN_GRACE_MS = 30_000;

/**
 * How long an order list outlives its last change, and a cancel marker its setting: a day,
 * whatever the queue's `retainMs`. Both are removed when their jobs finish (a list that
 * empties is gone), so this bounds only leftovers; a shorter expiry would drop the order of
 * a backlog waiting behind a long turn, or a cancel not yet read.
 */
export const ORDER_TTL_MS = 86_400_000;

/**
 * Drops the finished or orphaned entries at the head of a session's order list: an entry is
 * `<job id> <ms accepted>`; it is done when its job hash is gone or has `finishedOn`, and
 * orphaned when its job hash never appeared within the grace.
 */
const DROP_DEAD_HEADS = `
local function dropDeadHeads(order, jobPrefix, now, grace)
  while true do
    local head = redis.call('LINDEX', order, 0)
    if not head then return nil end
    local space = string.find(head, ' ', 1, true)
    local id = string.sub(head, 1, space - 1)
    local at = tonumber(string.sub(head, space + 1))
    local job = jobPrefix .. id
    local exists = redis.call('EXISTS', job) == 1
    if exists and redis.call('HEXISTS', job, 'finishedOn') == 0 then return id end
    if not exists and now - at < grace then return id end
    redis.call('LPOP', order)
  end
end
`;

/**
 * KEYS[1] the order list. ARGV: job prefix, job id, now, grace, policy, marker prefix,
 * marker ttl (s), cancel channel. Returns `{ 'duplicate' }`, `{ 'rejected', head }` or
 * `{ 'accepted', cancelled... }`.
 */
const APPEND = `${DROP_DEAD_HEADS}
local order, jobPrefix, id, now, grace, policy = KEYS[1], ARGV[1], ARGV[2], tonumber(ARGV[3]), tonumber(ARGV[4]), ARGV[5]
if redis.call('EXISTS', jobPrefix .. id) == 1 then return { 'duplicate' } end
local head = dropDeadHeads(order, jobPrefix, now, grace)
if head and policy == 'reject' then return { 'rejected', head } end
local cancelled = { 'accepted' }
if head and (policy == 'interrupt' or policy == 'rollback') then
  local keep = policy == 'interrupt' and '1' or '0'
  for _, entry in ipairs(redis.call('LRANGE', order, 0, -1)) do
    local other = string.sub(entry, 1, string.find(entry, ' ', 1, true) - 1)
    if other ~= id then
      redis.call('SET', ARGV[6] .. other, keep, 'EX', tonumber(ARGV[7]))
      table.insert(cancelled, other)
    end
  end
  if #cancelled > 1 then redis.call('PUBLISH', ARGV[8], cjson.encode({ jobs = { unpack(cancelled, 2) }, keepSteps = keep == '1' })) end
end
redis.call('RPUSH', order, id .. ' ' .. ARGV[3])
redis.call('PEXPIRE', order, tonumber(ARGV[7]) * 1000)
return cancelled
`;

/**
 * KEYS[1] the order list. ARGV: job prefix, job id, now, grace, marker prefix. Returns
 * `{ 'head', marker }` (this job runs now; marker '1'/'0' when it was cancelled before it
 * started, else false), `{ 'absent', marker }` (not in the list: it finished its turn once,
 * or was queued before ordering existed: it runs) or `{ 'wait', head }`.
 */
const TURN_OF = `${DROP_DEAD_HEADS}
local order, jobPrefix, id = KEYS[1], ARGV[1], ARGV[2]
local head = dropDeadHeads(order, jobPrefix, tonumber(ARGV[3]), tonumber(ARGV[4]))
local marker = redis.call('GET', ARGV[5] .. id)
if head == id then return { 'head', marker } end
for _, entry in ipairs(redis.call('LRANGE', order, 0, -1)) do
  if string.sub(entry, 1, string.find(entry, ' ', 1, true) - 1) == id then return { 'wait', head } end
end
return { 'absent', marker }
`;

/**
 * KEYS[1] the order list. ARGV: job prefix, job id, now, grace, marker prefix, list ttl (ms),
 * and optionally a channel and a message to publish once the job is out of the order (its
 * result: an enqueuer that sends the next turn on hearing it finds this one gone). Removes
 * the job's entries and marker; returns the next head (the list's expiry renewed for it).
 */
const FINISH = `${DROP_DEAD_HEADS}
local order, jobPrefix, id = KEYS[1], ARGV[1], ARGV[2]
for _, entry in ipairs(redis.call('LRANGE', order, 0, -1)) do
  if string.sub(entry, 1, string.find(entry, ' ', 1, true) - 1) == id then redis.call('LREM', order, 0, entry) end
end
redis.call('DEL', ARGV[5] .. id)
local next = dropDeadHeads(order, jobPrefix, tonumber(ARGV[3]), tonumber(ARGV[4]))
if next then redis.call('PEXPIRE', order, tonumber(ARGV[6])) end
if ARGV[7] then redis.call('PUBLISH', ARGV[7], ARGV[8]) end
return next
`;

/**
 * KEYS[1] the order list. ARGV: job prefix, now, grace, marker prefix, marker ttl (s),
 * cancel channel, keep ('1'/'0'). Marks the head (the turn running or about to run) cancelled
 * and tells the workers; returns its job id, or false when the session has none.
 */
const CANCEL_HEAD = `${DROP_DEAD_HEADS}
local head = dropDeadHeads(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
if not head then return false end
redis.call('SET', ARGV[4] .. head, ARGV[7], 'EX', tonumber(ARGV[5]))
redis.call('PUBLISH', ARGV[6], cjson.encode({ jobs = { head }, keepSteps = ARGV[7] == '1' }))
return head
`;

/**
 * KEYS[1] the order list. ARGV: job prefix, now, grace. The head's job id and its BullMQ
 * `data` (false while the job is not added yet), or false when the session has no turn.
 */
const HEAD = `${DROP_DEAD_HEADS}
local head = dropDeadHeads(KEYS[1], ARGV[1], tonumber(ARGV[2]), tonumber(ARGV[3]))
if not head then return false end
return { head, redis.call('HGET', ARGV[1] .. head, 'data') }
`;

/** A message on the cancel channel: the jobs whose turns are to stop. */
export interface CancelMessage {
  readonly jobs: readonly string[];
  readonly keepSteps: boolean;
}

/** Where a job stands in its session's order. */
export type TurnPlace =
  | { readonly kind: 'run'; readonly cancelled: { readonly keepSteps: boolean } | undefined }
  | { readonly kind: 'wait'; readonly head: string };

/**
 * The accepted order of each session's turns, across every enqueuing instance: a Redis list
 * per session (`<prefix>:<queue>:order:<session>`) that an enqueue appends the job to — in
 * the same script that checks for a duplicate and applies the double-texting policy —
 * before it adds the job to BullMQ. A worker runs a job only when it heads its session's
 * list, and removes it when the job is done. BullMQ's own per-key ordering (groups) is a
 * BullMQ Pro feature; its open-source deduplication keeps only the latest job
 * (`keepLastIfActive`), which would drop messages. See docs/scaling.md.
 */
export class SessionOrder {
  constructor(
    private readonly names: QueueNames,
    private readonly redis: Redis,
  ) {}

  /** Appends a job; what the policy made of it. */
  async append(
    sessionId: string,
    jobId: string,
    policy: DoubleTextPolicy,
  ): Promise<{ kind: 'duplicate' } | { kind: 'rejected'; head: string } | { kind: 'accepted'; cancelled: string[] }> {
    const reply = (await this.run(
      APPEND,
      this.key('order:' + sessionId),
      this.key(''),
      jobId,
      Date.now(),
      ORPHAN_GRACE_MS,
      policy,
      this.key('cancelled:'),
      this.ttlSeconds(),
      cancelChannel(this.names),
    )) as string[];
    if (reply[0] === 'duplicate') return { kind: 'duplicate' };
    if (reply[0] === 'rejected') return { kind: 'rejected', head: reply[1]! };
    return { kind: 'accepted', cancelled: reply.slice(1) };
  }

  /** Where `jobId` stands: it runs now, or waits for `head`. */
  async placeOf(sessionId: string, jobId: string): Promise<TurnPlace> {
    const [kind, value] = (await this.run(
      TURN_OF,
      this.key('order:' + sessionId),
      this.key(''),
      jobId,
      Date.now(),
      ORPHAN_GRACE_MS,
      this.key('cancelled:'),
    )) as [string, string | null];
    if (kind === 'wait') return { kind: 'wait', head: value! };
    return { kind: 'run', cancelled: typeof value === 'string' ? { keepSteps: value === '1' } : undefined };
  }

  /**
   * The job is done (or failed for good): the next job of the session may run. Returns its
   * id. With `publish`, the same round trip then publishes `message` on `channel`.
   */
  async finish(
    sessionId: string,
    jobId: string,
    publish?: { readonly channel: string; readonly message: string },
  ): Promise<string | undefined> {
    const tail = publish ? [publish.channel, publish.message] : [];
    const next = (await this.run(
      FINISH,
      this.key('order:' + sessionId),
      this.key(''),
      jobId,
      Date.now(),
      ORPHAN_GRACE_MS,
      this.key('cancelled:'),
      ORDER_TTL_MS,
      ...tail,
    )) as string | null;
    return next ?? undefined;
  }

  /** Marks the session's running (or next) turn cancelled and tells every worker; its job id, or undefined. */
  async cancelHead(sessionId: string, keepSteps: boolean): Promise<string | undefined> {
    const head = (await this.run(
      CANCEL_HEAD,
      this.key('order:' + sessionId),
      this.key(''),
      Date.now(),
      ORPHAN_GRACE_MS,
      this.key('cancelled:'),
      this.ttlSeconds(),
      cancelChannel(this.names),
      keepSteps ? '1' : '0',
    )) as string | null;
    return head ?? undefined;
  }

  /** The session's turn that runs now (or runs next): its job id and the job's data as BullMQ keeps it (JSON; undefined before the job is added). */
  async head(sessionId: string): Promise<{ jobId: string; data: string | undefined } | undefined> {
    const reply = (await this.run(HEAD, this.key('order:' + sessionId), this.key(''), Date.now(), ORPHAN_GRACE_MS)) as
      [string, string | null] | null;
    if (!reply) return undefined;
    return { jobId: reply[0], data: reply[1] ?? undefined };
  }

  /** `<prefix>:<queue>:<rest>`, beside BullMQ's own keys (a job's hash is `<prefix>:<queue>:<job id>`; job ids hold no `:`). */
  private key(rest: string): string {
    return `${this.names.prefix}:${this.names.queueName}:${rest}`;
  }

  /** Runs a script by its SHA (EVALSHA), loading it once when Redis does not know it yet. */
  private async run(script: string, ...args: (string | number)[]): Promise<unknown> {
    const sha = shaOf(script);
    try {
      return await this.redis.evalsha(sha, 1, ...args);
    } catch (error) {
      if (!(error instanceof Error) || !error.message.includes('NOSCRIPT')) throw error;
      return this.redis.eval(script, 1, ...args);
    }
  }

  private ttlSeconds(): number {
    return ORDER_TTL_MS / 1000;
  }
}

/** The channel every worker of a queue listens to for cancelled turns. */
export function cancelChannel(names: QueueNames): string {
  return `${names.prefix}:${names.queueName}:cancel`;
}

/** Parses a cancel-channel message; undefined for anything else. */
export function parseCancelMessage(text: string): CancelMessage | undefined {
  try {
    const value = JSON.parse(text) as { jobs?: unknown; keepSteps?: unknown };
    if (!Array.isArray(value.jobs) || !value.jobs.every((j) => typeof j === 'string')) return undefined;
    return { jobs: value.jobs, keepSteps: value.keepSteps === true };
  } catch {
    return undefined;
  }
}

const shas = new Map<string, string>();

function shaOf(script: string): string {
  let sha = shas.get(script);
  if (sha === undefined) {
    sha = createHash('sha1').update(script).digest('hex');
    shas.set(script, sha);
  }
  return sha;
}
