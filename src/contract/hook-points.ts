import type {
  InferenceRequest,
  MemoryReadPayload,
  SessionEndPayload,
  SessionStartPayload,
  TaskEndPayload,
  TaskStartPayload,
  ToolCallInfo,
  ToolCallOutcome,
  ToolCandidate,
  ToolRegisterPayload,
  TurnExchange,
} from './hook-payloads.js';
import type { DelegatedPayload, DelegatingPayload } from './delegation.js';
import type { ChatMessage, ModelResponse } from './model-provider.js';

/** How a point runs its handlers. */
export type HookMode = 'sequential' | 'parallel' | 'pipeline' | 'collect' | 'gate';

/** The hook results a point accepts besides a plain value. */
export type HookControl = 'block' | 'cancel';

export interface HookPointSpec {
  readonly mode: HookMode;
  readonly allows: readonly HookControl[];
  /** Shutdown runs handlers in reverse order. */
  readonly reverse?: boolean;
}

const NONE: readonly never[] = [];

/**
 * The hook catalog: every point with its mode, the controls it allows and its order. The
 * engine picks the mode from here; {@link HookPayloads} gives each point's payload and
 * result types, so a call site names the point once and gets both.
 */
export const HOOK_POINTS = {
  'app.startup': { mode: 'sequential', allows: NONE },
  'app.shutdown': { mode: 'sequential', allows: NONE, reverse: true },
  'app.heartbeat': { mode: 'parallel', allows: NONE },
  'session.start': { mode: 'parallel', allows: NONE },
  'session.end': { mode: 'parallel', allows: NONE },
  'message.received': { mode: 'pipeline', allows: ['block'] },
  'task.start': { mode: 'parallel', allows: NONE },
  'task.end': { mode: 'parallel', allows: NONE },
  'planning.started': { mode: 'pipeline', allows: NONE },
  'memory.read': { mode: 'collect', allows: NONE },
  'tool.register': { mode: 'collect', allows: NONE },
  'tool.select': { mode: 'pipeline', allows: NONE },
  'llm.before': { mode: 'pipeline', allows: NONE },
  'llm.after': { mode: 'pipeline', allows: NONE },
  'tool.gate': { mode: 'gate', allows: NONE },
  'tool.before_call': { mode: 'pipeline', allows: ['block'] },
  'tool.after_call': { mode: 'pipeline', allows: NONE },
  'tool.error': { mode: 'pipeline', allows: NONE },
  'memory.write': { mode: 'pipeline', allows: NONE },
  'message.sending': { mode: 'pipeline', allows: ['cancel'] },
  'agent.delegating': { mode: 'gate', allows: NONE },
  'agent.delegated': { mode: 'parallel', allows: NONE },
} as const satisfies Record<string, HookPointSpec>;

export type HookPoint = keyof typeof HOOK_POINTS;

/**
 * Each point's payload (what handlers get) and, for pipeline and collect points, the
 * value handlers return (pipeline: the next value; collect: one item or a list of them).
 */
export interface HookPayloads {
  'app.startup': { payload: undefined };
  'app.shutdown': { payload: string | undefined };
  'app.heartbeat': { payload: number };
  'session.start': { payload: SessionStartPayload };
  'session.end': { payload: SessionEndPayload };
  'message.received': { payload: string; value: string };
  'task.start': { payload: TaskStartPayload };
  'task.end': { payload: TaskEndPayload };
  'planning.started': { payload: string; value: string };
  'memory.read': { payload: MemoryReadPayload; item: ChatMessage };
  'tool.register': { payload: ToolRegisterPayload; item: string };
  'tool.select': { payload: readonly ToolCandidate[]; value: readonly ToolCandidate[] };
  'llm.before': { payload: InferenceRequest; value: InferenceRequest };
  'llm.after': { payload: ModelResponse; value: ModelResponse };
  'tool.gate': { payload: ToolCallInfo };
  'tool.before_call': { payload: ToolCallInfo; value: ToolCallInfo };
  'tool.after_call': { payload: ToolCallOutcome; value: ToolCallOutcome };
  'tool.error': { payload: ToolCallOutcome; value: ToolCallOutcome };
  'memory.write': { payload: ToolCallOutcome | TurnExchange; value: ToolCallOutcome | TurnExchange };
  'message.sending': { payload: string; value: string };
  /** An agent is about to use another (as a tool, or by handing over): block or suspend it here. */
  'agent.delegating': { payload: DelegatingPayload };
  /** A delegation ran: the sub-agent's turn ended, or the session changed hands. */
  'agent.delegated': { payload: DelegatedPayload };
}

/** The payload handlers of `P` receive. */
export type HookPayload<P extends HookPoint> = HookPayloads[P]['payload'];

type ModeOf<P extends HookPoint> = (typeof HOOK_POINTS)[P]['mode'];
export type PointsOfMode<M extends HookMode> = { [P in HookPoint]: ModeOf<P> extends M ? P : never }[HookPoint];

export function isHookPoint(value: string): value is HookPoint {
  return Object.prototype.hasOwnProperty.call(HOOK_POINTS, value);
}

export const HOOK_POINT_NAMES = Object.keys(HOOK_POINTS) as HookPoint[];
