import type { Usage } from './model-provider.js';

/**
 * Token usage rolled up over a turn and the sub-agent turns it delegated to: the total,
 * per model, and per agent (each agent's own model calls, whatever depth they ran at).
 */
export interface RolledUpUsage extends Usage {
  readonly byModel: Readonly<Record<string, Usage>>;
  readonly byAgent: Readonly<Record<string, Usage>>;
}

/**
 * What one plugin (or owning team) caused in a turn: model tokens, and the wall time of its
 * tools, of its hooks and transforms, and of the model calls that read its tools' results.
 */
export interface AttributedUsage extends Usage {
  /** Wall time of its tool calls, in milliseconds. */
  readonly toolMs: number;
  readonly toolCalls: number;
  /** Wall time of its hooks and transforms in the turn, in milliseconds. */
  readonly hookMs: number;
  /** Wall time of the model calls attributed to it (as its tokens are), in milliseconds. */
  readonly modelMs: number;
}

/** A turn's spend split by plugin and by owner (`TurnUsage.byPlugin` / `byOwner`). */
export interface UsageSplit {
  readonly byPlugin: Readonly<Record<string, AttributedUsage>>;
  readonly byOwner: Readonly<Record<string, AttributedUsage>>;
}
