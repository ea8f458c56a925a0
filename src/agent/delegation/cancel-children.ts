import type { SuspensionRecord } from '../durability/suspension-record.js';
import type { SessionParts } from '../turn/turn-envelope.js';
import { childLeaseWaitMs } from './agent-tool.js';
import { waitingChild } from './delegated-decisions.js';

/**
 * Cancels the suspended turns of the sub-agents that hold waiting calls of `record`, before
 * the caller's own turn is cancelled: a call waiting inside a child session must not stay
 * approvable there once the turn that asked for it is gone ({@link waitingChild} finds the
 * child session of each). Each child cancels its own children first.
 * A failure propagates, so the caller stays suspended and the cancel can be tried again
 * (children already cancelled then have nothing waiting).
 */
export async function cancelChildren(parts: SessionParts, record: SuspensionRecord): Promise<void> {
  const children = new Map<string, string>();
  for (const waiting of record.pending) {
    const child = waitingChild(parts.id, record, waiting);
    if (child) children.set(child.sessionId, child.agent);
  }
  for (const [id, agent] of children) {
    const target = parts.host.agent?.(agent);
    // An app without that agent any more cannot open the child; its turn then stays as it is.
    if (!target) continue;
    await target.session(id).cancelPending({ waitForLease: childLeaseWaitMs(parts.host) });
  }
}
