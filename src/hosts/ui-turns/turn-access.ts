import {
  ownerDecidesSessionPolicy,
  TrellisError,
  type SessionAccess,
  type SessionAction,
  type SessionPolicy,
} from '../../../index.js';
import { authorizeSessionAccess } from '../../../host.js';
import type { TurnSession } from './turn-session.js';

/** Who may use a conversation's session, as a protocol handler's options say it. */
export interface TurnAccessOptions<R> {
  /**
   * Who the caller of a request is (a user id from your auth), or undefined for nobody (401).
   * Given, every request is checked by `policy` and the caller owns the sessions they open;
   * without it (and without `policy`), anyone who knows a conversation id reaches its session.
   */
  readonly principal?: (request: R) => string | undefined | Promise<string | undefined>;
  /** Who may read, send to or decide on a session. Default `ownerDecidesSessionPolicy`: the owner does all three. */
  readonly policy?: SessionPolicy;
}

/** Checks one request's access to a session; undefined when the host asked for no checks. */
export type TurnGuard<R> = (
  session: TurnSession,
  action: SessionAction,
  request: R,
  context: Readonly<Record<string, unknown>> | undefined,
  ownerNow?: () => Promise<{ readonly owner: string | undefined; readonly opened: boolean }>,
) => Promise<SessionAccess | undefined>;

/**
 * The guard a handler asks before it runs anything: none without `principal` or `policy`;
 * otherwise 401 `Unauthenticated` without a caller, 403 `AuthDenied` when the policy says no,
 * and the access to hand the kernel when it says yes.
 *
 * @throws TrellisError `InvalidOptions` when `principal` or `policy` is not a function.
 */
export function turnGuard<R>(options: TurnAccessOptions<R>, host: string): TurnGuard<R> {
  for (const field of ['principal', 'policy'] as const) {
    if (options[field] !== undefined && typeof options[field] !== 'function') {
      throw new TrellisError('InvalidOptions', `${host}: ${field} must be a function, got ${typeof options[field]}`, {
        hint: 'See "Who may use a conversation" in the docs of the protocol',
      });
    }
  }
  const { principal, policy } = options;
  if (!principal && !policy) return async () => undefined;
  if (!principal) {
    throw new TrellisError('InvalidOptions', `${host}: a policy needs a principal (who the caller is)`, {
      hint: 'Pass principal: (request) => userIdOf(request)',
    });
  }
  return async (session, action, request, context, ownerNow) =>
    authorizeSessionAccess({
      action,
      sessionId: session.id,
      principal: await principal(request),
      context: context ?? {},
      policy: policy ?? ownerDecidesSessionPolicy,
      ownerNow: ownerNow ?? (() => session.ownerNow()),
      host,
      principalHint: "Sign the caller in: the handler's principal option found no user on this request",
    });
}

/** The HTTP status of an error a protocol handler answers with: 401, 403, 404, 409, 400 for the caller's mistakes, else 500. */
export function httpStatusOf(error: unknown): number {
  if (!TrellisError.is(error) || error.kind === 'system') return 500;
  switch (error.code) {
    case 'Unauthenticated':
      return 401;
    case 'AuthDenied':
      return 403;
    case 'SessionNotFound':
      return 404;
    case 'SessionBusy':
    case 'StaleState':
      return 409;
    default:
      return 400;
  }
}
