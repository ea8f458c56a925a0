import { ContextScope } from '../engine/state/context-scope.js';
import { TrellisError } from '../errors/trellis-error.js';
import { KERNEL_KEYS } from '../contract/kernel-keys.js';
import { commitKernelWrites, sessionValue } from '../engine/state/kernel-writes.js';
import type { SessionParts } from './turn/turn-envelope.js';

/**
 * Who asks for a turn, resume or cancel, and the owner a host checked their access against
 * (`SendOptions.access`). The kernel checks it again under the session's lease, before
 * anything runs, so a session opened by someone else between the host's check and the turn
 * is refused rather than written to.
 */
export interface SessionAccess {
  /** The caller (a user id). A session without an owner gets it as its owner with its first turn. */
  readonly principal: string;
  /** The session's owner when the host checked the caller's access; null when it had none. */
  readonly owner: string | null;
}

/** The principal that opened the session (`trellis.owner`), or undefined for a session nobody owns. */
export function ownerOf(parts: SessionParts): string | undefined {
  const owner = parts.state.session.values[KERNEL_KEYS.owner];
  return typeof owner === 'string' ? owner : undefined;
}

/** What is wrong with an `access` option, as the error to reject with; undefined when nothing is. */
export function accessProblem(access: unknown, where: string): TrellisError | undefined {
  if (access === undefined || isSessionAccess(access)) return undefined;
  return new TrellisError('InvalidOptions', `${where}: access must be { principal: string, owner: string | null }`, {
    hint: 'Pass the caller as principal and the owner you checked their access against (null when the session had none)',
  });
}

/**
 * Refuses the work when the session's owner is no longer the one the host checked against;
 * gives a session without an owner the caller as its owner (kept with the next checkpoint).
 *
 * @throws TrellisError `AuthDenied` when the owner changed since the check.
 */
export function enforceAccess(parts: SessionParts, access: SessionAccess | undefined, claim: boolean): void {
  if (access === undefined) return;
  const owner = ownerOf(parts) ?? null;
  // Checked while nobody owned it, and the caller's own earlier turn opened it since: still theirs.
  const openedByCaller = access.owner === null && owner === access.principal;
  if (owner !== access.owner && !openedByCaller) {
    throw new TrellisError(
      'AuthDenied',
      `Session '${parts.id}' is not the one '${access.principal}' was allowed to use: another user opened it meanwhile`,
      {
        hint: "Check the caller's access to the session again (its owner changed), then retry",
        details: { sessionId: parts.id },
      },
    );
  }
  if (claim && owner === null) {
    commitKernelWrites(new ContextScope(parts.state, undefined, undefined), parts.host.registry, [
      sessionValue(KERNEL_KEYS.owner, access.principal),
    ]);
  }
}

/** A well-formed `access` option: a principal of 1 to 512 characters and an owner or null. */
function isSessionAccess(value: unknown): value is SessionAccess {
  if (typeof value !== 'object' || value === null) return false;
  const { principal, owner } = value as Partial<SessionAccess>;
  return (
    typeof principal === 'string' &&
    principal.length > 0 &&
    principal.length <= 512 &&
    (owner === null || typeof owner === 'string')
  );
}
