/** How a point runs its handlers (DESIGN §5). */
export type HookMode = 'sequential' | 'parallel' | 'pipeline' | 'collect' | 'gate';

/** The hook results a point accepts besides a plain value. */
export type HookControl = 'block' | 'cancel';

export interface HookPointSpec {
  readonly mode: HookMode;
  readonly allows: readonly HookControl[];
  /** Shutdown runs handlers in reverse order. */
  readonly reverse?: boolean;
}

const NONE: readonly HookControl[] = [];

/** Every hook point, with its mode and the controls it allows. */
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
} as const satisfies Record<string, HookPointSpec>;

export type HookPoint = keyof typeof HOOK_POINTS;

export function isHookPoint(value: string): value is HookPoint {
  return Object.prototype.hasOwnProperty.call(HOOK_POINTS, value);
}

export const HOOK_POINT_NAMES = Object.keys(HOOK_POINTS) as HookPoint[];
