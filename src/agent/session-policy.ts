import { TrellisError } from '../errors/trellis-error.js';
import type { SessionAccess } from './session-owner.js';

/** What a caller asks to do with a session: read it (or stream it), send to it, cancel its turn or waiting calls, decide on its waiting calls. */
export type SessionAction = 'read' | 'send' | 'cancel' | 'decide';

/** One question to a {@link SessionPolicy}: may this principal do this to this session? */
export interface SessionAccessRequest {
  readonly action: SessionAction;
  readonly sessionId: string;
  /** The caller, as the host's `principal` option read it from the request. */
  readonly principal: string;
  /** The principal that opened the session; undefined when nobody owns it. */
  readonly owner: string | undefined;
  /**
   * Whether the session has messages or waiting calls. A session nobody owns that is opened
   * was written before owners were kept: only a policy of the host's may hand it to someone.
   */
  readonly opened: boolean;
  /** The request's host context (`app.*` keys: scopes, tenant, roles), where the host has one. */
  readonly context: Readonly<Record<string, unknown>>;
}

/**
 * Decides whether a caller may read, send to, cancel or decide on a session; asked by the
 * hosts that take requests from users (the Nest sessions API and chat endpoint, the AI SDK,
 * AG-UI and A2A handlers) before anything runs. `false` is a 403 `AuthDenied`.
 */
export type SessionPolicy = (request: SessionAccessRequest) => boolean | Promise<boolean>;

/**
 * The sessions API's default policy: a session is its owner's. The owner reads it, sends to it
 * and cancels its turn or waiting calls; a new session is anyone's to open (and becomes theirs;
 * reading one that does not exist finds nothing); a session with messages and no owner (kept
 * before owners were) is nobody's until the host's policy says whose; nobody decides on a
 * waiting call unless the host's own policy grants it (a supervisor's approval).
 *
 * @example
 * // Supervisors decide; everything else stays owner-only.
 * policy: (r) => r.action === 'decide' ? hasScope(r.context, 'refunds:approve') : ownerOnlySessionPolicy(r)
 */
export function ownerOnlySessionPolicy(request: SessionAccessRequest): boolean {
  if (request.action === 'decide') return false;
  return ownerOrNew(request);
}

/**
 * The conversation hosts' default policy (the `useChat` endpoint, AG-UI, A2A): as
 * {@link ownerOnlySessionPolicy}, except that the owner also decides on the calls their own
 * conversation waits for — the approval buttons of a chat are the owner's. The app's approval
 * policies (`Trellis.create({ approvals })`) still apply to every decision.
 */
export function ownerDecidesSessionPolicy(request: SessionAccessRequest): boolean {
  return ownerOrNew(request);
}

function ownerOrNew(request: SessionAccessRequest): boolean {
  // Nothing is there yet: opening it makes it the caller's; reading or deciding finds nothing.
  if (request.owner === undefined) return !request.opened;
  return request.owner === request.principal;
}

/** The default principal: the host context's `app.user_id`, when it is a non-empty string. */
export function userIdPrincipal(context: Readonly<Record<string, unknown>>): string | undefined {
  const id = context['app.user_id'];
  return typeof id === 'string' && id.length > 0 ? id : undefined;
}

/** One access check, as a host asks it. */
export interface SessionAccessCheck {
  readonly action: SessionAction;
  readonly sessionId: string;
  /** The caller; undefined or empty is a 401 `Unauthenticated`. */
  readonly principal: string | undefined;
  readonly context: Readonly<Record<string, unknown>>;
  readonly policy: SessionPolicy;
  /** The session's owner and whether it is opened, read without waiting behind its running turn. */
  readonly ownerNow: () => Promise<{ readonly owner: string | undefined; readonly opened: boolean }>;
  /** Who asks, for the messages: e.g. `The sessions API of agent 'support'`. */
  readonly host: string;
  /** How the host is told who the caller is, for the 401's hint. */
  readonly principalHint: string;
}

/**
 * Asks the policy whether the caller may do `action` to the session, and hands back the access
 * to pass to `send` / `resume` / `cancelPending` (`SendOptions.access`), which the kernel checks
 * again under the session's lease.
 *
 * @throws TrellisError `Unauthenticated` without a principal, `AuthDenied` when the policy says no.
 */
export async function authorizeSessionAccess(check: SessionAccessCheck): Promise<SessionAccess> {
  const { action, sessionId, principal } = check;
  if (typeof principal !== 'string' || principal.length === 0) {
    throw new TrellisError('Unauthenticated', `${check.host} needs a signed-in caller`, { hint: check.principalHint });
  }
  const { owner, opened } = await check.ownerNow();
  if ((await check.policy({ action, sessionId, principal, owner, opened, context: check.context })) !== true) {
    throw new TrellisError('AuthDenied', `'${principal}' may not ${action} session '${sessionId}'`, {
      hint:
        action === 'decide'
          ? "Deciding on waiting calls needs a permission the host's session policy grants"
          : "Only the session's owner, or whom the host's session policy allows, may use it",
    });
  }
  return { principal, owner: owner ?? null };
}
