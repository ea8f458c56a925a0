import { IsOptional, IsString, MaxLength } from 'class-validator';
import type { ChatMessage } from '../../contract/model-provider.js';

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
  /**
   * The agent runs elsewhere (another service, e.g. over A2A: `a2aAgent(…)` from
   * `trellis/a2a`): the call asks it instead of running a local agent's turn. `agent` is then
   * the remote agent's label in events and errors; `context` is not sent.
   */
  readonly remote?: RemoteAgent;
}

/**
 * An agent served by another process or service, called as a tool by a local agent. The call
 * goes through gates, permissions, middleware and events like any tool; the answer is the
 * tool's result (the reply text, or `{ state, taskId, text }` when the remote agent waits for
 * input, so the model can relay its question and call again with the answer and `taskId`).
 */
export interface RemoteAgent {
  /** Tags of the tool (e.g. `a2a`), beside `agent`. */
  readonly tags?: readonly string[];
  /**
   * What a crash during the call leaves: `ask` (the default) puts the call in doubt before
   * a human; `retry` when the remote agent deduplicates a repeated request.
   */
  readonly onCrash?: 'retry' | 'ask';
  /** Sends one message to the remote agent and waits for its answer. */
  ask(message: string, call: RemoteAgentCall): Promise<RemoteAgentReply>;
}

/** Where a remote agent's call comes from. */
export interface RemoteAgentCall {
  /** The calling session: one remote conversation per local session. */
  readonly sessionId: string;
  readonly callId: string;
  /** Stable across a re-run of the same call (see docs/durable-steps.md). */
  readonly idempotencyKey: string;
  /** The remote task to continue, when the model passes the `taskId` of an earlier answer. */
  readonly taskId?: string;
  readonly signal?: AbortSignal;
}

/** A remote agent's answer. */
export interface RemoteAgentReply {
  /** `completed`, or the remote task's other state: `input-required`, `failed`, `rejected`, … */
  readonly state: string;
  readonly text: string;
  readonly taskId?: string;
  /** Structured parts of the answer (e.g. the calls the remote agent waits on). */
  readonly data?: readonly unknown[];
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

/** The default input of a remote agent's tool: the message, and the remote task it continues. */
export class RemoteAgentInput {
  /** What to ask the remote agent, in full, or the answer to its question. */
  @IsString()
  @MaxLength(100_000)
  input!: string;

  /** The `taskId` of the remote agent's earlier answer, when it asked for input. */
  @IsOptional()
  @IsString()
  @MaxLength(200)
  taskId?: string;
}

/** The most sub-agents nested inside one top-level turn, unless an agent sets `maxDelegationDepth`. */
export const DEFAULT_MAX_DELEGATION_DEPTH = 3;
