import type { RolledUpUsage } from './agent-usage.js';
import type { PendingApproval } from './suspension.js';
import type { ToolResult } from './tool-result.js';

/**
 * Where a sub-agent's turn runs in a delegation: the agents from the top-level one down
 * to this one, and the caller's call that started it. Absent on a top-level turn.
 */
export interface DelegationFrame {
  /** Agent names from the top-level agent down to the one running this turn. */
  readonly path: readonly string[];
  readonly parentSessionId: string;
  readonly parentCallId: string;
  /**
   * The smallest `maxDelegationDepth` of the agents above this turn, and whose it is: a call
   * from here may not nest deeper than that. Absent in frames written before it was added.
   */
  readonly depthLimit?: { readonly agent: string; readonly max: number };
}

/** What `agent.delegating` gates (a gate-mode hook point): one agent about to use another. */
export interface DelegatingPayload {
  /** `tool`: the caller keeps control and gets the reply; `handoff`: the conversation moves. */
  readonly kind: 'tool' | 'handoff';
  readonly from: string;
  readonly to: string;
  /** The caller's tool call that asked for it. */
  readonly callId: string;
  /** The arguments the model gave the delegation tool. */
  readonly input: unknown;
  /** Agent names from the top-level agent down to `from`. */
  readonly path: readonly string[];
}

/** What `agent.delegated` observes once a delegation ran (or handed the session over). */
export interface DelegatedPayload {
  readonly kind: 'tool' | 'handoff';
  readonly from: string;
  readonly to: string;
  readonly callId: string;
  /** The sub-agent's child session (agent as tool); absent for a handoff. */
  readonly childSessionId?: string;
  /** How the sub-agent's turn ended (`completed`, `suspended`, …); `handed_off` for a handoff. */
  readonly status: string;
  readonly path: readonly string[];
}

/**
 * What a delegation tool hands the tool pipeline: the sub-agent's result with its usage,
 * or its suspension (the calls inside it that wait for a human, already named from the
 * caller's point of view). Internal to the kernel: plugins never see one.
 */
export class DelegatedOutcome {
  private constructor(
    readonly result: ToolResult | undefined,
    readonly usage: RolledUpUsage | undefined,
    readonly suspended: ChildSuspension | undefined,
  ) {}

  static finished(result: ToolResult, usage: RolledUpUsage | undefined): DelegatedOutcome {
    return new DelegatedOutcome(result, usage, undefined);
  }

  static suspended(suspension: ChildSuspension): DelegatedOutcome {
    return new DelegatedOutcome(undefined, undefined, suspension);
  }
}

/** A sub-agent's turn that ended suspended. */
export interface ChildSuspension {
  readonly agent: string;
  readonly childSessionId: string;
  /** Its waiting calls, ids prefixed with the caller's call id, `path` from the caller down. */
  readonly pending: readonly PendingApproval[];
}

/** A handoff asked for in a round, kept at turn level until the round's calls are done. */
export interface HandoffMark {
  readonly agent: string;
  readonly from: string;
}
