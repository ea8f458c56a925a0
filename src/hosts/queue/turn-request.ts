import { TrellisError, type Approver, type Decision, type SessionAccess } from '../../../index.js';
import type { DoubleTextPolicy } from './session-order.js';

/** What every turn request names: which agent, which session, and which turn. */
interface TurnRequestBase {
  /** The agent's name; the worker resolves it to an `Agent` of its app. */
  readonly agent: string;
  readonly sessionId: string;
  /**
   * The caller's key for this turn, unique within the session: a message id, a request id,
   * the index of the user's message. The job id is derived from the session id and this
   * key, so enqueuing the same turn twice (a retried HTTP request, a duplicated message)
   * runs it once.
   */
  readonly key: string;
  /** Host context (`app.*`) for this turn, as `agent.session(id, { context })` takes it. */
  readonly context?: Readonly<Record<string, unknown>>;
  /** The caller and the owner their access was checked against (`SendOptions.access`): the worker checks it again. */
  readonly access?: SessionAccess;
}

/** A new message for a session: `session.send(message)` on some worker. */
export interface SendRequest extends TurnRequestBase {
  readonly message: string;
  /** What this send does if its session is busy; default the queue's (see `TurnQueueOptions.doubleTexting`). */
  readonly doubleTexting?: DoubleTextPolicy;
}

/** Decisions on a suspended turn: `session.resume({ decisions })` on some worker. */
export interface ResumeRequest extends TurnRequestBase {
  readonly decisions: readonly Decision[];
  /** Who decided, as the enqueuing host vouches for them: the worker passes it to `resume` for the approval policies and the audit log. */
  readonly approver?: Approver;
}

/**
 * Cancelling a session's suspended turn without a new message: `session.cancelPending()`
 * on some worker, in the session's turn order (it waits for a turn that is running).
 */
export interface CancelRequest extends TurnRequestBase {}

/** What a queued job does to its session. */
export type TurnJobKind = 'send' | 'resume' | 'cancel';

/** The data of one queued job, as it travels through Redis. */
export type TurnJobData =
  | ({ readonly kind: 'send' } & SendRequest & TurnJobProgress)
  | ({ readonly kind: 'resume' } & ResumeRequest & TurnJobProgress)
  | ({ readonly kind: 'cancel' } & CancelRequest & TurnJobProgress);

/** What a worker records on the job before it runs the turn (see `TurnJobRunner`). */
export interface TurnJobProgress {
  /** The session's revision when an attempt started; set before the turn runs. */
  readonly startRevision?: number;
  /**
   * How many attempts began running the turn (set with `startRevision`). Those that did not
   * end — not finished, not failed with an error (`attemptsMade`) — were cut off by a worker
   * that died or stalled; after `TrellisWorkerOptions.maxCrashes` of them the turn is parked.
   */
  readonly runs?: number;
}

/**
 * The job id of a turn: kind, session id and key, each URI-encoded (BullMQ refuses `:` in
 * ids), so one turn has one id on every instance.
 *
 * @example jobIdOf('send', 'user:42', 'm-7') === 'send.user%3A42.m-7'
 */
export function jobIdOf(kind: TurnJobKind, sessionId: string, key: string): string {
  return `${kind}.${encodePart(sessionId)}.${encodePart(key)}`;
}

/** `.` is encoded too, so the separators are unambiguous ("a.b"+"c" ≠ "a"+"b.c"). */
function encodePart(part: string): string {
  return encodeURIComponent(part).replaceAll('.', '%2E');
}

/**
 * Checks a request before it is queued, so a bad one fails on the enqueuing instance with
 * a clear message instead of as a failed job on a worker.
 */
export function assertTurnRequest(kind: TurnJobKind, request: SendRequest | ResumeRequest | CancelRequest): void {
  const problems: string[] = [];
  for (const field of ['agent', 'sessionId', 'key'] as const) {
    if (typeof request[field] !== 'string' || request[field].length === 0)
      problems.push(`${field} must be a non-empty string`);
  }
  if (kind === 'send' && typeof (request as SendRequest).message !== 'string')
    problems.push('message must be a string');
  if (
    kind === 'resume' &&
    (!Array.isArray((request as ResumeRequest).decisions) || (request as ResumeRequest).decisions.length === 0)
  )
    problems.push('decisions must be a non-empty list');
  if (
    request.context !== undefined &&
    (typeof request.context !== 'object' || request.context === null || Array.isArray(request.context))
  )
    problems.push('context must be an object of app.* keys');
  const access = request.access as Partial<SessionAccess> | null | undefined;
  if (
    access !== undefined &&
    (typeof access !== 'object' ||
      access === null ||
      typeof access.principal !== 'string' ||
      !(access.owner === null || typeof access.owner === 'string'))
  )
    problems.push('access must be { principal: string, owner: string | null }');
  if (problems.length === 0) return;
  const what = kind === 'cancel' ? 'cancel' : `${kind} turn`;
  const fields = { send: ', message', resume: ', decisions', cancel: '' }[kind];
  throw new TrellisError('InvalidOptions', `Cannot queue a ${what}:\n- ${problems.join('\n- ')}`, {
    hint: `Pass { agent, sessionId, key${fields} }`,
  });
}
