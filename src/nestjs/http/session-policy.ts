import type { HostContext } from '../trellis-module-options.js';

/** What a caller of the sessions API asks to do with a session. */
export type SessionAction = 'read' | 'send' | 'cancel' | 'decide';

/** One question to a {@link SessionPolicy}: may this principal do this to this session? */
export interface SessionAccessRequest {
  readonly action: SessionAction;
  readonly sessionId: string;
  /** The caller, as `TrellisSessionsOptions.principal` read it from the request's host context. */
  readonly principal: string;
  /** The principal that opened the session; undefined when nobody owns it. */
  readonly owner: string | undefined;
  /**
   * Whether the session has messages or waiting calls. A session nobody owns that is opened
   * was written before owners were kept: only a policy of the host's may hand it to someone.
   */
  readonly opened: boolean;
  /** The request's host context (`TrellisModuleOptions.requestContext`): scopes, tenant, roles. */
  readonly context: HostContext;
}

/**
 * Decides whether a caller may read, send to, cancel or decide on a session; checked in each
 * handler of the sessions API (never by route strings), before anything runs. `false` is a
 * 403 `AuthDenied`.
 */
export type SessionPolicy = (request: SessionAccessRequest) => boolean | Promise<boolean>;

/**
 * The default policy: a session is its owner's. The owner reads it, sends to it and cancels
 * its waiting calls; a new session is anyone's to open (and becomes theirs; reading one that
 * does not exist is a 404, not a 403); a session with messages and no owner (kept before
 * owners were) is nobody's until the host's policy says whose; nobody decides on
 * a waiting call unless the host's own policy grants it (see docs/nestjs.md).
 *
 * @example
 * // Supervisors decide; everything else stays owner-only.
 * policy: (r) => r.action === 'decide' ? hasScope(r.context, 'refunds:approve') : ownerOnlySessionPolicy(r)
 */
export function ownerOnlySessionPolicy(request: SessionAccessRequest): boolean {
  if (request.action === 'decide') return false;
  // Nothing is there yet: opening it makes it the caller's; reading or cancelling finds nothing (404).
  if (request.owner === undefined) return !request.opened;
  return request.owner === request.principal;
}

/** The default principal: the host context's `app.user_id`, when it is a non-empty string. */
export function userIdPrincipal(context: HostContext): string | undefined {
  const id = context['app.user_id'];
  return typeof id === 'string' && id.length > 0 ? id : undefined;
}
