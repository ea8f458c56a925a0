import { IsString } from 'class-validator';
import type { ChatMessage } from '../../models/model-provider.js';

/**
 * Another agent of the same app offered as a tool (the caller keeps control). A call runs
 * one full turn of that agent in a child session of its own (own transcript, round budget
 * and plugin filter); its reply, or with `output` its structured result, is the tool result.
 *
 * @example
 * app.agent({ name: 'orchestrator', …, agents: [{ agent: 'billing', name: 'ask_billing',
 *   description: 'Ask the billing agent about invoices and refunds.', context: ['app.user_id'] }] })
 */
export interface AgentToolSpec {
  /** The sub-agent's name, as given to `app.agent({ name })` (resolved when the tool is called). */
  readonly agent: string;
  /** The tool's name, as the model sees it. */
  readonly name: string;
  /** When to use this agent, and when not: a prompt for the model. */
  readonly description: string;
  /** The input DTO (class-validator). Default: `{ input: string }`. */
  readonly input?: new () => object;
  /** The message the sub-agent gets. Default: `input.input` for the default DTO, else the arguments as JSON. */
  readonly message?: (input: object) => string;
  /** A DTO for a structured result: the sub-agent's reply is parsed as JSON and checked against it. */
  readonly output?: new () => object;
  /**
   * Keys of the caller's context (turn, then session level) given to the sub-agent's
   * session as its context. Nothing else of the caller is passed on: not its transcript,
   * not its plugins' state.
   */
  readonly context?: readonly string[];
}

/**
 * Another agent of the same app the model may hand the conversation to: the session's
 * active agent changes, that agent answers this turn and the next ones, until it hands
 * back (with a handoff of its own).
 */
export interface HandoffSpec {
  /** The agent taking over, as given to `app.agent({ name })`. */
  readonly agent: string;
  /** The tool's name. Default: `handoff_to_<agent>`. */
  readonly name?: string;
  /** When to hand over: a prompt for the model. Default: "Hand the conversation to <agent>". */
  readonly description?: string;
  /** The input DTO of the handoff tool (e.g. a reason, an order id). Default: `{ input: string }`. */
  readonly input?: new () => object;
  /**
   * What the new agent sees of the conversation before the handoff, every turn it is
   * active. Default: all of it.
   */
  readonly history?: (messages: readonly ChatMessage[]) => readonly ChatMessage[];
}

/** The default input of an agent tool or handoff: one text. */
export class AgentInput {
  /** What to ask the sub-agent, in full: it sees nothing else of this conversation. */
  @IsString()
  input!: string;
}

/** The most sub-agents nested inside one top-level turn, unless an agent sets `maxDelegationDepth`. */
export const DEFAULT_MAX_DELEGATION_DEPTH = 3;
