import type { RecordedTurnEvent } from '../../../../stores.js';

/** What a timeline row stands for. Spans have a duration; marks (`commit`, `error`, …) are instants. */
export type TimelineKind =
  'round' | 'model' | 'hook' | 'tool' | 'commit' | 'error' | 'suspended' | 'retry' | 'effect' | 'resumed';

/** One row of a turn's waterfall; times are milliseconds from the turn's first event. */
export interface TimelineRow {
  readonly kind: TimelineKind;
  readonly label: string;
  readonly detail: string;
  readonly start: number;
  readonly duration: number;
  /** 0 for rounds and what happens outside them, 1 inside a round. */
  readonly depth: number;
  readonly failed: boolean;
}

/** A turn drawn from its recorded events. */
export interface TurnTimeline {
  readonly rows: readonly TimelineRow[];
  /** Milliseconds from the first to the last event. */
  readonly duration: number;
  /** The last `turn.finished` status, or `running` when the turn has not finished yet. */
  readonly status: string;
}

/** Names of a tool's middleware chain, outermost first (the registry knows them; events do not). */
export type MiddlewareOf = (tool: string) => readonly string[];

/**
 * Turns recorded events into waterfall rows: rounds, the model call of each round with its
 * tokens, hook runs with plugin and duration, tool calls with middleware and duration,
 * state commits, effects, retries, suspensions and errors. The model call has no start
 * event, so its bar runs from the last thing before it in the round (usually an
 * `llm.before` hook) to `round.finished`.
 */
export function buildTimeline(
  events: readonly RecordedTurnEvent[],
  middlewareOf: MiddlewareOf = () => [],
): TurnTimeline {
  const origin = events[0]?.at ?? 0;
  const rows: TimelineRow[] = [];
  const rounds = new Map<number, number>();
  const tools = new Map<string, { at: number; tool: string; args: unknown }>();
  let inRound = false;
  let lastInRound = origin;
  let status = 'running';
  let starts = 0;
  const add = (row: Omit<TimelineRow, 'depth' | 'failed'> & { failed?: boolean }) =>
    rows.push({ depth: inRound && row.kind !== 'round' ? 1 : 0, failed: false, ...row });
  for (const { at, event } of events) {
    const t = at - origin;
    switch (event.type) {
      case 'turn.started':
        if (starts++ > 0)
          add({ kind: 'resumed', label: 'resumed', detail: `turn ${event.turn + 1} resumed`, start: t, duration: 0 });
        break;
      case 'round.started':
        rounds.set(event.round, t);
        inRound = true;
        lastInRound = t;
        break;
      case 'round.finished': {
        const begun = rounds.get(event.round) ?? t;
        const { inputTokens, outputTokens } = event.usage;
        add({
          kind: 'model',
          label: event.model,
          detail: `${inputTokens} in / ${outputTokens} out tokens`,
          start: lastInRound,
          duration: t - lastInRound,
        });
        inRound = false;
        rows.push({
          kind: 'round',
          label: `round ${event.round}`,
          detail: `model call ${event.model}`,
          start: begun,
          duration: t - begun,
          depth: 0,
          failed: false,
        });
        break;
      }
      case 'hook.exited':
        add({
          kind: 'hook',
          label: `${event.point} · ${event.plugin}`,
          detail: `hook ${event.point} by ${event.plugin}`,
          start: Math.max(0, t - event.durationMs),
          duration: event.durationMs,
        });
        lastInRound = t;
        break;
      case 'tool.started':
        tools.set(event.callId, { at: t, tool: event.tool, args: event.args });
        break;
      case 'tool.finished': {
        const begun = tools.get(event.callId)?.at ?? Math.max(0, t - event.durationMs);
        tools.delete(event.callId);
        const chain = middlewareOf(event.tool);
        const outcome = event.ok ? 'ok' : `${event.error?.code ?? 'failed'}: ${event.error?.message ?? ''}`;
        add({
          kind: 'tool',
          label: event.tool,
          detail: `${outcome} · middleware: ${chain.length > 0 ? chain.join(' → ') : 'none'}`,
          start: begun,
          duration: event.durationMs,
          failed: !event.ok,
        });
        break;
      }
      case 'tool.suspended': {
        const begun = tools.get(event.callId)?.at ?? t;
        tools.delete(event.callId);
        add({
          kind: 'suspended',
          label: event.tool,
          detail: `waiting for approval: ${event.message}`,
          start: begun,
          duration: t - begun,
        });
        break;
      }
      case 'tool.retry':
        add({
          kind: 'retry',
          label: event.tool,
          detail: `attempt ${event.attempt} after ${event.error.code}; next in ${Math.round(event.delayMs)} ms`,
          start: t,
          duration: 0,
        });
        break;
      case 'tool.output_invalid':
        add({
          kind: 'error',
          label: event.tool,
          detail: `output invalid: ${event.message}`,
          start: t,
          duration: 0,
          failed: true,
        });
        break;
      case 'state.committed':
        add({
          kind: 'commit',
          label: `revision ${event.revision}`,
          detail: event.keys.join(', ') || '(no keys)',
          start: t,
          duration: 0,
        });
        break;
      case 'effect.dispatched':
        add({ kind: 'effect', label: event.effect, detail: `handled by ${event.plugin}`, start: t, duration: 0 });
        break;
      case 'error':
        add({
          kind: 'error',
          label: event.code,
          detail: `${event.plugin ? `${event.plugin}${event.point ? ` at ${event.point}` : ''}: ` : ''}${event.message}`,
          start: t,
          duration: 0,
          failed: true,
        });
        break;
      case 'turn.finished':
        status = event.status;
        break;
      default:
        break;
    }
  }
  const last = events.at(-1);
  return {
    rows: rows.sort((a, b) => a.start - b.start || a.depth - b.depth),
    duration: last ? last.at - origin : 0,
    status,
  };
}
