import { TrellisError } from '../../errors/trellis-error.js';
import { globToRegExp } from './tool-glob.js';

/**
 * Who may decide on a suspended call of which tools, and how. A call takes the first policy
 * (in the order given to `Trellis.create({ approvals })`) whose `tools` or `tags` match it;
 * a call no policy matches is decided by anyone the host lets resume, as before.
 *
 * @example
 * { name: 'refunds', tools: ['payments.refund'], roles: ['finance'], quorum: 2, expiresAfterMs: 3_600_000, requireReason: true }
 */
export interface ApprovalPolicy {
  /** Named in audit entries and errors. Default: the first of its tools or tags. */
  readonly name?: string;
  /** Tool names or globs (`payments.*`). */
  readonly tools?: readonly string[];
  /** Tool tags (`@Tool({ tags })`): a call of a tool with any of them matches. */
  readonly tags?: readonly string[];
  /** The approver must have one of these roles. Absent: any approver the host vouches for. */
  readonly roles?: readonly string[];
  /** Distinct approvers needed before the call runs (default 1). One rejection rejects. */
  readonly quorum?: number;
  /** A call still waiting this long after it was parked is rejected, and the model told so. */
  readonly expiresAfterMs?: number;
  /** Every decision needs a reason (`Decision.reason`, or `message` for a reject). */
  readonly requireReason?: boolean;
}

/** The app's approval settings (`Trellis.create({ approvals })`). */
export interface ApprovalSettings {
  readonly policies?: readonly ApprovalPolicy[];
  /**
   * Once the app is started, sweep the store this often (ms, 1,000 to 86,400,000) for waiting
   * calls past their policy's `expiresAfterMs`: they are rejected and their turns go on, as
   * `app.expirePending()` does. Every process may sweep; a session another holds is skipped.
   */
  readonly sweepEveryMs?: number;
  /**
   * The host context (`app.*`) a swept session is opened with before its turn goes on (host
   * context is never read back from the store). Default none.
   */
  readonly sweepContext?: SweepContext;
}

/** The host context a swept session is opened with (`approvals.sweepContext`); undefined: none. */
export type SweepContext = (session: {
  readonly id: string;
  readonly agent: string;
}) => Readonly<Record<string, unknown>> | undefined | Promise<Readonly<Record<string, unknown>> | undefined>;

/** A policy, checked and ready to match. */
export interface CompiledPolicy extends ApprovalPolicy {
  readonly name: string;
  readonly quorum: number;
  matches(tool: string, tags: readonly string[]): boolean;
}

/**
 * Checks the policies once, at `Trellis.create`, so a typo fails the app rather than letting
 * every call through.
 *
 * @throws TrellisError `InvalidOptions` naming the policy and the field.
 */
export function compileApprovalPolicies(settings: ApprovalSettings | undefined): readonly CompiledPolicy[] {
  if (settings === undefined) return [];
  const policies = settings.policies ?? [];
  if (!Array.isArray(policies)) throw bad('approvals.policies must be a list of policies', settings);
  const every = settings.sweepEveryMs;
  if (every !== undefined && !(Number.isSafeInteger(every) && every >= 1_000 && every <= 86_400_000))
    throw bad(
      `approvals.sweepEveryMs must be a whole number of milliseconds from 1,000 to 86,400,000, got ${String(every)}`,
      settings,
    );
  if (settings.sweepContext !== undefined && typeof settings.sweepContext !== 'function')
    throw bad('approvals.sweepContext must be a function ({ id, agent }) => context', settings);
  return policies.map((policy, i) => compileOne(policy, i));
}

function compileOne(policy: ApprovalPolicy, index: number): CompiledPolicy {
  const where = `approvals.policies[${index}]`;
  if (typeof policy !== 'object' || policy === null) throw bad(`${where} must be an object`, policy);
  const list = (field: 'tools' | 'tags' | 'roles') => {
    const value = policy[field];
    if (value === undefined) return undefined;
    if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === 'string' && v.length > 0))
      throw bad(`${where}.${field} must be a non-empty list of names`, policy);
    return value as readonly string[];
  };
  const tools = list('tools');
  const tags = list('tags');
  const roles = list('roles');
  if (!tools && !tags) throw bad(`${where} matches nothing: give it tools (names or globs) or tags`, policy);
  const quorum = policy.quorum ?? 1;
  if (!Number.isSafeInteger(quorum) || quorum < 1 || quorum > 100)
    throw bad(`${where}.quorum must be a whole number from 1 to 100, got ${String(policy.quorum)}`, policy);
  const expiry = policy.expiresAfterMs;
  if (expiry !== undefined && !(Number.isSafeInteger(expiry) && expiry > 0))
    throw bad(`${where}.expiresAfterMs must be a positive whole number of milliseconds, got ${String(expiry)}`, policy);
  if (policy.requireReason !== undefined && typeof policy.requireReason !== 'boolean')
    throw bad(`${where}.requireReason must be true or false`, policy);
  if (policy.name !== undefined && (typeof policy.name !== 'string' || policy.name.length === 0))
    throw bad(`${where}.name must be a non-empty string`, policy);
  const patterns = (tools ?? []).map(globToRegExp);
  const tagSet = new Set(tags ?? []);
  return {
    ...policy,
    ...(roles && { roles }),
    name: policy.name ?? (tools ?? tags)![0]!,
    quorum,
    matches: (tool, toolTags) => patterns.some((p) => p.test(tool)) || toolTags.some((t) => tagSet.has(t)),
  };
}

/** The policy a call of `tool` falls under: the first that matches, or none. */
export function policyFor(
  policies: readonly CompiledPolicy[],
  tool: string,
  tags: readonly string[],
): CompiledPolicy | undefined {
  for (const policy of policies) if (policy.matches(tool, tags)) return policy;
  return undefined;
}

function bad(message: string, value: unknown): TrellisError {
  return new TrellisError('InvalidOptions', message, {
    hint: "Write a policy as { tools: ['payments.refund'], roles: ['finance'], quorum: 2, expiresAfterMs: 3600000, requireReason: true }",
    details: { value },
  });
}
