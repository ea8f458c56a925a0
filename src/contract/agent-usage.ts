import type { Usage } from '../models/model-provider.js';

/**
 * Token usage rolled up over a turn and the sub-agent turns it delegated to: the total,
 * per model, and per agent (each agent's own model calls, whatever depth they ran at).
 */
export interface RolledUpUsage extends Usage {
  readonly byModel: Readonly<Record<string, Usage>>;
  readonly byAgent: Readonly<Record<string, Usage>>;
}
