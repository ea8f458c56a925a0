import type { PluginMember } from '../../contract/plugin-member.js';
import type { StateSchema } from '../../contract/state-schema.js';
import type { ContextSnapshot } from './context-level.js';
import { resolveDeclared } from './context-pool.js';
import { MemberContext } from './member-context.js';

const NO_DEPS: Readonly<Record<string, unknown>> = Object.freeze({});

/** Where a member runs: the scope it writes to, the snapshot it reads, the point it serves. */
export interface MemberSite {
  /** The scope it writes to (a `ContextScope`); here only its session's id is read. */
  readonly scope: { readonly state: { readonly sessionId: string } };
  readonly snapshot: ContextSnapshot;
  readonly schema: StateSchema;
  /** The hook point, `transform`, `tool.call`, an action's point or `effect:<type>`. */
  readonly point: string;
  /** Gates and transforms are pure: their `ctx.set` throws. */
  readonly readOnly?: boolean;
  readonly signal?: AbortSignal;
}

/** A member's context and what its handler returned. */
export interface Invocation {
  readonly ctx: MemberContext;
  readonly out: unknown;
}

/**
 * Resolves a member's `@Requires` keys against the site's snapshot (a missing one throws
 * `MissingContext`) and builds its cropped context. Tools use this directly, since their
 * middleware runs between the context and the call.
 */
export function memberContext(member: PluginMember, site: MemberSite): MemberContext {
  // Most members declare nothing: no lookup. The `plugin.method` name is built only for a missing key's error.
  const deps =
    member.requires.length === 0 ? NO_DEPS : resolveDeclared(member.requires, site.snapshot, site.schema, member);
  return new MemberContext(
    member,
    site.snapshot,
    site.schema,
    site.point,
    deps,
    site.readOnly === true,
    site.signal,
    site.scope.state.sessionId,
  );
}

/**
 * The one recipe for calling a plugin member (hooks, transforms, actions, effects): its
 * context, then the handler. Synchronous when the handler is: only a returned promise is
 * awaited. Throws what the handler throws; callers name the plugin and point in the error.
 */
export function invokeMember(member: PluginMember, value: unknown, site: MemberSite): Invocation | Promise<Invocation> {
  const ctx = memberContext(member, site);
  const out = member.fn(value, ctx as never);
  if (isThenable(out)) return Promise.resolve(out).then((resolved) => ({ ctx, out: resolved }));
  return { ctx, out };
}

/**
 * {@link invokeMember} for a member whose context the caller does not need afterwards (a
 * transform: read-only, so it leaves no command): what the handler returned, with a
 * thenable made a promise; no `Invocation` record.
 */
export function callMember(member: PluginMember, value: unknown, site: MemberSite): unknown {
  const out = member.fn(value, memberContext(member, site) as never);
  return isThenable(out) ? Promise.resolve(out) : out;
}

function isThenable(value: unknown): value is PromiseLike<unknown> {
  return (
    value !== null &&
    (typeof value === 'object' || typeof value === 'function') &&
    typeof (value as { then?: unknown }).then === 'function'
  );
}
