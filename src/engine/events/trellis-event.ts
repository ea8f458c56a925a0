import type { ModelDelta, Usage } from '../../contract/model-provider.js';
import type { ToolErrorInfo } from '../../contract/tool-result.js';

/** Every event on `app.events$` and `session.events$`, discriminated by `type`. */
export type TrellisEvent =
  | { readonly type: 'plugin.installed'; readonly plugin: string; readonly version: string }
  | { readonly type: 'plugin.uninstalled'; readonly plugin: string }
  | { readonly type: 'plugin.reloaded'; readonly plugin: string; readonly from: string; readonly to: string }
  | { readonly type: 'hook.entered'; readonly point: string; readonly plugin: string; readonly sessionId?: string }
  | {
      readonly type: 'hook.exited';
      readonly point: string;
      readonly plugin: string;
      readonly durationMs: number;
      readonly sessionId?: string;
    }
  | {
      readonly type: 'state.committed';
      readonly sessionId: string;
      readonly revision: number;
      readonly keys: readonly string[];
    }
  | { readonly type: 'effect.dispatched'; readonly sessionId: string; readonly effect: string; readonly plugin: string }
  | {
      readonly type: 'error';
      readonly code: string;
      readonly message: string;
      readonly plugin?: string;
      readonly point?: string;
      readonly sessionId?: string;
      readonly owner?: string;
    }
  | {
      readonly type: 'turn.started';
      readonly sessionId: string;
      readonly turn: number;
      /** A sub-agent's turn (agent as tool): its agent, and the caller's session and call it runs for. */
      readonly agent?: string;
      readonly parent?: { readonly sessionId: string; readonly callId: string };
      /** The turn goes on from its step journal after a crash cut it off (its earlier steps are not repeated). */
      readonly recovered?: true;
    }
  | {
      readonly type: 'turn.finished';
      readonly sessionId: string;
      readonly turn: number;
      readonly status: string;
      readonly durationMs: number;
      /** The plugins, and their owning teams, that spent anything in the turn (tools, hooks, transforms, attributed tokens). */
      readonly plugins?: readonly string[];
      readonly owners?: readonly string[];
    }
  | { readonly type: 'round.started'; readonly sessionId: string; readonly turn: number; readonly round: number }
  | {
      readonly type: 'round.finished';
      readonly sessionId: string;
      readonly turn: number;
      readonly round: number;
      readonly model: string;
      readonly usage: Usage;
      /** Whose tool results this model call read, with each plugin's share of its tokens; absent for the agent's own rounds. */
      readonly causes?: readonly RoundCause[];
    }
  | { readonly type: 'model.delta'; readonly sessionId: string; readonly delta: ModelDelta }
  /**
   * A typed turn's answer as it streams (`output`: the DTO's name): the JSON so far, read
   * leniently (open objects hold what is complete, a string being written its characters so
   * far). Not validated: `TurnResult.output` is the checked answer. Not sent with `streamText: 'final'`.
   */
  | {
      readonly type: 'output.partial';
      readonly sessionId: string;
      readonly turn: number;
      readonly round: number;
      readonly output: string;
      readonly partial: Readonly<Record<string, unknown>>;
    }
  | {
      readonly type: 'model.fallback';
      readonly sessionId?: string;
      readonly from: string;
      readonly to: string;
      readonly reason: string;
    }
  | {
      readonly type: 'tool.started';
      readonly sessionId: string;
      readonly callId: string;
      readonly tool: string;
      readonly args: unknown;
    }
  | {
      readonly type: 'tool.finished';
      readonly sessionId: string;
      readonly callId: string;
      readonly tool: string;
      readonly ok: boolean;
      readonly durationMs: number;
      readonly error?: ToolErrorInfo;
      readonly plugin?: string;
      readonly owner?: string;
    }
  | {
      readonly type: 'tool.retry';
      readonly sessionId?: string;
      readonly callId: string;
      readonly tool: string;
      readonly attempt: number;
      readonly delayMs: number;
      readonly error: ToolErrorInfo;
    }
  | {
      readonly type: 'tool.suspended';
      readonly sessionId: string;
      readonly callId: string;
      readonly tool: string;
      readonly message: string;
    }
  | {
      readonly type: 'tool.output_invalid';
      readonly sessionId: string;
      readonly callId: string;
      readonly tool: string;
      readonly plugin: string;
      readonly message: string;
    }
  | {
      readonly type: 'budget.exceeded';
      readonly sessionId: string;
      readonly callId: string;
      readonly tool: string;
      readonly budget: string;
      readonly plugin: string;
      readonly owner?: string;
      readonly limit: string;
      readonly max: number;
      readonly window: string;
      readonly spent: number;
    }
  | { readonly type: 'heartbeat'; readonly at: number }
  | { readonly type: 'plugin.event'; readonly plugin: string; readonly name: string; readonly data?: unknown };

export type TrellisEventType = TrellisEvent['type'];

/** One plugin a model call's tokens are attributed to (`round.finished`): its share, and its owner when it has one. */
export interface RoundCause {
  readonly plugin: string;
  readonly owner?: string;
  /** Its part of the round's tokens, from 0 to 1 (one share per call of its tools in the round before). */
  readonly share: number;
}
