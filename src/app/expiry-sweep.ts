import { describeError } from '../errors/describe-error.js';
import { TrellisError } from '../errors/trellis-error.js';
import type { Agent } from '../agent/agent.js';
import { expiredCalls } from '../agent/approval/expiry.js';
import type { CompiledPolicy, SweepContext } from '../agent/approval/approval-policy.js';
import { parseSuspension } from '../agent/durability/suspension-record.js';
import type { TurnStatus } from '../agent/turn/turn-result.js';
import type { RegisteredTool } from '../contract/plugin-member.js';
import type { SessionStore } from '../engine/stores/session-store.js';

/** What one sweep for expired calls did (`app.expirePending()`). */
export interface ExpiryReport {
  /** Sessions whose expired calls were rejected, with the status their turn went on to. */
  readonly expired: readonly { readonly sessionId: string; readonly status: TurnStatus }[];
  /** Sessions another process (or a turn here) held: the next sweep, or their resume, expires their calls. */
  readonly busy: readonly string[];
  /** Sessions whose expiry failed (their turn's error). */
  readonly failed: readonly { readonly sessionId: string; readonly error: string }[];
}

/** What a sweep needs of the app. */
export interface SweepSite {
  readonly store: SessionStore;
  readonly policies: readonly CompiledPolicy[];
  readonly tools: ReadonlyMap<string, RegisteredTool>;
  /** This app's agent of that name, if it has one. */
  agent(name: string): Agent | undefined;
  readonly context?: SweepContext;
}

/**
 * Rejects the waiting calls whose approval policy's `expiresAfterMs` ran out, in every suspended
 * session of the store whose agent this app has: each is read from the store, and only one with
 * an expired call is opened and continued (`session.expirePending()`), so the model is told and
 * the turn goes on. A session whose lease is held elsewhere is left for later, not waited for.
 * Sub-agents' sessions are swept through their callers (their calls wait there too).
 */
export async function sweepExpired(site: SweepSite, now = Date.now()): Promise<ExpiryReport> {
  const report = {
    expired: [] as { sessionId: string; status: TurnStatus }[],
    busy: [] as string[],
    failed: [] as { sessionId: string; error: string }[],
  };
  if (!site.policies.some((p) => p.expiresAfterMs !== undefined)) return report;
  for (const summary of await site.store.list()) {
    // A sub-agent's session (`<session>><agent>:…`) is decided through its caller.
    if (!summary.suspended || summary.id.includes('>')) continue;
    const agent = site.agent(summary.agent);
    if (agent === undefined) continue;
    try {
      const stored = await site.store.load(summary.id);
      const record = stored === undefined ? undefined : parseSuspension(stored.suspension, summary.id);
      if (record === undefined || expiredCalls(record, site.policies, site.tools, now).length === 0) continue;
      const context = await site.context?.({ id: summary.id, agent: summary.agent });
      const result = await agent
        .session(summary.id, context === undefined ? {} : { context })
        .expirePending({ waitForLease: 0 });
      if (result !== undefined) report.expired.push({ sessionId: summary.id, status: result.status });
    } catch (error) {
      if (TrellisError.is(error, 'SessionBusy')) report.busy.push(summary.id);
      else report.failed.push({ sessionId: summary.id, error: describeError(error) });
    }
  }
  return report;
}
