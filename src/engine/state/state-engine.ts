import { describeError } from '../../errors/describe-error.js';
import type { ContextScope } from './context-scope.js';
import { commandOf } from '../context/member-context.js';
import { invokeMember } from '../context/member-invoker.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { EventBus } from '../events/event-bus.js';
import {
  isEmptyCommand,
  type EmittedEffect,
  type ScheduledAction,
  type StateCommand,
} from '../../contract/state-command.js';
import type { StateSchema } from '../../contract/state-schema.js';

/** More EXECUTE rounds than this at one point is a loop. */
export const MAX_PHASE_ROUNDS = 16;
const MAX_EFFECT_DEPTH = 8;

/** The actions a point's GATHER scheduled, waiting for its EXECUTE phase. */
export interface Phase {
  readonly point: string;
  pending: ScheduledAction[] | undefined;
}

/** Where a command is committed: the scope it touches and the plugins that are installed. */
export interface StateTarget {
  readonly scope: ContextScope;
  readonly schema: StateSchema;
}

/**
 * Commits commands, runs scheduled actions (EXECUTE) and dispatches effects after each
 * commit. One per app; stateless between calls.
 */
export class StateEngine {
  constructor(private readonly events: EventBus) {}

  async submit(command: StateCommand, target: StateTarget, phase: Phase, depth = 0): Promise<void> {
    if (isEmptyCommand(command)) return;
    target.scope.state.commit(command, target.scope, target.schema);
    if (command.actions.length > 0) (phase.pending ??= []).push(...command.actions);
    if (command.effects.length > 0) await this.dispatch(command.effects, target, phase, depth);
  }

  /** EXECUTE: runs scheduled actions, each on a fresh snapshot, until none is left. */
  async execute(phase: Phase, target: StateTarget): Promise<void> {
    let rounds = 0;
    while (phase.pending !== undefined && phase.pending.length > 0) {
      if (++rounds > MAX_PHASE_ROUNDS) {
        throw new TrellisError(
          'PhaseLoopExceeded',
          `Actions at '${phase.point}' kept scheduling more actions for over ${MAX_PHASE_ROUNDS} rounds`,
          {
            hint: 'An action handler schedules an action that schedules it again; stop the cycle with a condition on state',
            details: { point: phase.point, pending: phase.pending.map((a) => a.type) },
          },
        );
      }
      const batch = phase.pending;
      phase.pending = undefined;
      for (const action of batch) {
        const handler = target.schema.actionHandler(action.type)!;
        const { ctx } = await invokeMember(handler, action.payload, {
          scope: target.scope,
          snapshot: target.scope.snapshot(),
          schema: target.schema,
          point: phase.point,
        });
        const command = commandOf(ctx);
        if (command) await this.submit(command, target, phase);
      }
    }
  }

  /** Effects go to their handlers after the commit; a failing handler is reported and blocks nothing. */
  private async dispatch(
    effects: readonly EmittedEffect[],
    target: StateTarget,
    phase: Phase,
    depth: number,
  ): Promise<void> {
    const sessionId = target.scope.state.sessionId;
    for (const effect of effects) {
      for (const handler of target.schema.effectHandlers(effect.type) ?? []) {
        try {
          if (depth >= MAX_EFFECT_DEPTH)
            throw new TrellisError('EffectFailed', `Effects nested deeper than ${MAX_EFFECT_DEPTH}`, {
              hint: 'Break the cycle of effects emitting effects',
            });
          const { ctx } = await invokeMember(handler, effect.payload, {
            scope: target.scope,
            snapshot: target.scope.snapshot(),
            schema: target.schema,
            point: `effect:${effect.type}`,
          });
          const command = commandOf(ctx);
          if (command) await this.submit(command, target, phase, depth + 1);
          this.events.emit({ type: 'effect.dispatched', sessionId, effect: effect.type, plugin: handler.plugin });
        } catch (error) {
          const message = describeError(error);
          this.events.emit({
            type: 'error',
            code: 'EffectFailed',
            message: `Effect '${effect.type}' handler ${handler.plugin}.${handler.method} failed: ${message}`,
            plugin: handler.plugin,
            sessionId,
          });
        }
      }
    }
  }
}
