import type { StateKeyEntry } from './plugin-member.js';

/** The kernel's own context keys (`trellis.*`): readable by every plugin, written only by the kernel. */
export const KERNEL_KEYS = {
  sessionId: 'trellis.session_id',
  user: 'trellis.user',
  /** The principal that opened the session (`SendOptions.access`), persisted with the session. */
  owner: 'trellis.owner',
  turnInput: 'trellis.turn_input',
  turnIndex: 'trellis.turn_index',
  lastToolResults: 'trellis.last_tool_results',
  contextMessages: 'trellis.context_messages',
  inferenceTurn: 'trellis.inference.turn',
  inferenceRound: 'trellis.inference.round',
  includeTools: 'trellis.tools.include',
  excludeTools: 'trellis.tools.exclude',
  roundIncludeTools: 'trellis.tools.round_include',
  roundExcludeTools: 'trellis.tools.round_exclude',
  /** The agent a handoff gave the session to: `{ agent, from, at }` (persisted with the session). */
  activeAgent: 'trellis.active_agent',
  /** A handoff asked for in this round: `{ agent, from }`, acted on when the round's calls are done. */
  handoff: 'trellis.handoff',
  /**
   * Whom the session is about: `{ userId?, tenant? }` from the host's session context
   * (`app.user_id`, `app.tenant`), persisted so that `app.erase({ userId })` finds a user's
   * sessions. Never read back as host context.
   */
  subject: 'trellis.subject',
  /**
   * The name of the DTO a typed turn's answer must be (`output`), kept with the turn's other
   * values, so a turn resumed or recovered elsewhere knows it was typed.
   */
  output: 'trellis.output',
} as const;

/**
 * The turn-level kernel keys the turn loop reads every round (messages added by actions,
 * inference overrides, tool filters, a handoff). A turn level records whether one was ever
 * set (`ContextLevel.steered`), so a round of a turn without them reads none of them.
 */
export const STEERING_KEYS: readonly string[] = [
  KERNEL_KEYS.contextMessages,
  KERNEL_KEYS.inferenceTurn,
  KERNEL_KEYS.inferenceRound,
  KERNEL_KEYS.includeTools,
  KERNEL_KEYS.excludeTools,
  KERNEL_KEYS.roundIncludeTools,
  KERNEL_KEYS.roundExcludeTools,
  KERNEL_KEYS.handoff,
];

const entry = (key: string, scope: StateKeyEntry['scope'], merge: StateKeyEntry['merge']): StateKeyEntry => ({
  key,
  owner: 'trellis',
  scope,
  merge,
  persistent: false,
  retainOnUninstall: true,
});

export const KERNEL_STATE_KEYS: readonly StateKeyEntry[] = [
  entry(KERNEL_KEYS.sessionId, 'session', 'exclusive'),
  entry(KERNEL_KEYS.user, 'session', 'exclusive'),
  entry(KERNEL_KEYS.turnInput, 'turn', 'exclusive'),
  entry(KERNEL_KEYS.turnIndex, 'turn', 'exclusive'),
  entry(KERNEL_KEYS.lastToolResults, 'turn', 'commutative'),
  entry(KERNEL_KEYS.contextMessages, 'turn', 'commutative'),
  entry(KERNEL_KEYS.inferenceTurn, 'turn', 'commutative'),
  entry(KERNEL_KEYS.inferenceRound, 'turn', 'commutative'),
  entry(KERNEL_KEYS.includeTools, 'turn', 'commutative'),
  entry(KERNEL_KEYS.excludeTools, 'turn', 'commutative'),
  entry(KERNEL_KEYS.roundIncludeTools, 'turn', 'commutative'),
  entry(KERNEL_KEYS.roundExcludeTools, 'turn', 'commutative'),
  { ...entry(KERNEL_KEYS.activeAgent, 'session', 'exclusive'), persistent: true },
  { ...entry(KERNEL_KEYS.owner, 'session', 'exclusive'), persistent: true },
  entry(KERNEL_KEYS.handoff, 'turn', 'exclusive'),
  entry(KERNEL_KEYS.output, 'turn', 'exclusive'),
  { ...entry(KERNEL_KEYS.subject, 'session', 'exclusive'), persistent: true },
];
