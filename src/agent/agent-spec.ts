import type { AgentToolSpec, HandoffSpec } from './delegation/agent-tool-spec.js';
import type { InferenceSettings, ModelProvider } from '../contract/model-provider.js';
import type { OutputClass } from './turn/turn-output.js';

/**
 * A named agent: its model, instructions, active plugins and limits. `TOutput` is the type of
 * its turns' typed answer when it has an `output` DTO.
 */
export interface AgentSpec<TOutput = unknown> {
  readonly name: string;
  /** One model, or several to fall back through on retryable errors, in order. */
  readonly model: ModelProvider | readonly ModelProvider[];
  /** The system prompt; `planning.started` hooks may extend it. */
  readonly instructions: string;
  /** Plugins whose tools, hooks and transforms this agent uses; empty or absent: all. */
  readonly plugins?: readonly string[];
  /** Model calls per turn at most. Default 10. */
  readonly maxRounds?: number;
  /** Tool calls of one round run at most this many at once. Default 4. */
  readonly toolConcurrency?: number;
  /**
   * The most tool calls one model response may ask for. A response asking for more runs none
   * of them and fails the turn with `ModelFailed` naming the count (a model looping on tool
   * calls, or a hostile endpoint, cannot run thousands of calls in one round). Default 128.
   */
  readonly maxToolCallsPerRound?: number;
  /**
   * A deadline for each turn, resume or recovery of this agent, in milliseconds: when it
   * passes the turn's signal aborts (the model call, tools honouring `ctx.signal`), and the
   * turn ends `cancelled` with a message naming `turnTimeoutMs`, releasing its lease. A model
   * stream that stalls cannot hold a session forever. Default: none.
   */
  readonly turnTimeoutMs?: number;
  /** Default inference settings; turn and round overrides merge over them field by field. */
  readonly inference?: InferenceSettings;
  /**
   * A class-validator DTO every turn's final answer must be (a `send` may ask for another with
   * its own `output`): the model may call tools first; its answer is parsed as JSON and
   * validated, and `result.output` is the DTO instance. Providers with structured outputs
   * (OpenAI, Anthropic) are sent the schema natively; others are asked in the system prompt. A
   * DTO one of the agent's models cannot express is refused here, with what to change. See
   * docs/models.md.
   *
   * @example
   * class Summary { @IsString() title!: string; @IsNumber() total!: number }
   * const agent = app.agent({ name: 'desk', model, instructions: '…', output: Summary });
   * (await agent.session().send('Sum up Q3')).output?.total; // number
   */
  readonly output?: OutputClass<TOutput>;
  /**
   * How many times an answer that is not a valid `output` is sent back to the model with its
   * field errors before the turn ends `failed` with `OutputInvalid`. Each is a round (it counts
   * in `rounds` and `maxRounds`). Default 2; 0 for none.
   */
  readonly maxOutputRepairs?: number;
  /**
   * How reply text reaches `events$`. `live` (default): each `model.delta` as the model
   * writes it. `final`: text deltas are held back and the reply is sent as one text delta
   * after `message.sending` — use it when a plugin rewrites replies (PII redaction), since
   * live deltas carry the model's raw text. Tool-call deltas stream either way.
   */
  readonly streamText?: 'live' | 'final';
  /**
   * The most characters of one tool result the model reads; a longer result is cut with
   * a note (the turn's record keeps all of it). A tool's own `maxResultChars` wins.
   * Default 100,000.
   */
  readonly maxToolResultChars?: number;
  /** Other agents of the app this agent may call as tools (see `docs/agents.md`). */
  readonly agents?: readonly AgentToolSpec[];
  /** Other agents of the app this agent may hand the conversation to. */
  readonly handoffs?: readonly HandoffSpec[];
  /**
   * How many sub-agents deep a turn of this agent may delegate (agent as tool), counted from
   * the top-level turn: a call that would go deeper is refused with `DelegationDepth`. The
   * smallest limit of the agents on the path holds, so a sub-agent cannot raise its caller's.
   * Default 3.
   */
  readonly maxDelegationDepth?: number;
}

export const DEFAULT_MAX_ROUNDS = 10;
export const DEFAULT_TOOL_CONCURRENCY = 4;
export const DEFAULT_MAX_TOOL_CALLS_PER_ROUND = 128;
