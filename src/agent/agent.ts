import { assertSessionId } from '../engine/stores/session-id.js';
import { randomUUID } from 'node:crypto';
import { TrellisError } from '../errors/trellis-error.js';
import { FallbackModel } from '../engine/models/fallback-model.js';
import { isModelProvider, type ModelProvider } from '../contract/model-provider.js';
import {
  DEFAULT_MAX_ROUNDS,
  DEFAULT_MAX_TOOL_CALLS_PER_ROUND,
  DEFAULT_TOOL_CONCURRENCY,
  type AgentSpec,
} from './agent-spec.js';
import { DEFAULT_RETENTION, OpenSessions } from './open-sessions.js';
import { delegationProblems } from './delegation/delegation-spec-check.js';
import { Session } from './session.js';
import { DELEGATE } from './delegation/delegate-handle.js';
import type { DelegateAgent, SessionHost } from './session-host.js';
import type { TurnLimits } from './turn/turn-runner.js';
import { DEFAULT_OUTPUT_REPAIRS, outputSpecOf, type OutputSpec } from './turn/turn-output.js';
import { schemaProblems, unsupportedSchema } from './turn/schema-check.js';
import { schemaDialectOf } from '../contract/model-provider.js';

export interface SessionOptions {
  /** Session-level host context (`app.*` keys): the user id, scopes, locale… */
  readonly context?: Readonly<Record<string, unknown>>;
}

/**
 * A named agent spec bound to an app; opens sessions. Made by `app.agent(spec)`. `TOutput` is
 * its turns' typed answer, when the spec has an `output` DTO.
 */
export class Agent<TOutput = unknown> {
  readonly limits: TurnLimits;
  /** The spec's `output` DTO, checked. */
  readonly output: OutputSpec | undefined;
  readonly #host: SessionHost;
  readonly #sessions: OpenSessions<Session>;

  /**
   * Not for applications: an agent is made with `app.agent(spec)`. (Not marked internal: the
   * published declarations would then offer a constructor without arguments.)
   */
  constructor(
    host: SessionHost,
    readonly spec: AgentSpec<TOutput>,
  ) {
    this.#host = host;
    this.#sessions = new OpenSessions<Session>(host.retention ?? DEFAULT_RETENTION, (id, session) => session.release());
    const problems: string[] = [];
    if (typeof spec?.name !== 'string' || spec.name.length === 0) problems.push('name must be a non-empty string');
    if (typeof spec?.instructions !== 'string') problems.push('instructions must be a string');
    const models = Array.isArray(spec?.model) ? spec.model : [spec?.model];
    if (models.length === 0 || !models.every(isModelProvider))
      problems.push('model must be a ModelProvider or a non-empty list of them');
    const maxRounds = spec?.maxRounds ?? DEFAULT_MAX_ROUNDS;
    const toolConcurrency = spec?.toolConcurrency ?? DEFAULT_TOOL_CONCURRENCY;
    const maxToolCallsPerRound = spec?.maxToolCallsPerRound ?? DEFAULT_MAX_TOOL_CALLS_PER_ROUND;
    if (spec?.turnTimeoutMs !== undefined && !(Number.isSafeInteger(spec.turnTimeoutMs) && spec.turnTimeoutMs >= 1))
      problems.push(`turnTimeoutMs must be a whole number of milliseconds ≥ 1, got ${String(spec.turnTimeoutMs)}`);
    if (!Number.isInteger(maxToolCallsPerRound) || maxToolCallsPerRound < 1)
      problems.push(`maxToolCallsPerRound must be a whole number ≥ 1, got ${String(maxToolCallsPerRound)}`);
    if (!Number.isInteger(maxRounds) || maxRounds < 1)
      problems.push(`maxRounds must be a whole number ≥ 1, got ${String(maxRounds)}`);
    if (!Number.isInteger(toolConcurrency) || toolConcurrency < 1)
      problems.push(`toolConcurrency must be a whole number ≥ 1, got ${String(toolConcurrency)}`);
    if (spec?.streamText !== undefined && spec.streamText !== 'live' && spec.streamText !== 'final')
      problems.push(`streamText must be 'live' or 'final', got ${String(spec.streamText)}`);
    if (
      spec?.maxToolResultChars !== undefined &&
      (!Number.isInteger(spec.maxToolResultChars) || spec.maxToolResultChars < 1)
    )
      problems.push(`maxToolResultChars must be a whole number ≥ 1, got ${String(spec.maxToolResultChars)}`);
    if (
      spec?.plugins !== undefined &&
      (!Array.isArray(spec.plugins) || !spec.plugins.every((p) => typeof p === 'string'))
    )
      problems.push('plugins must be a list of plugin names');
    const maxOutputRepairs = spec?.maxOutputRepairs ?? DEFAULT_OUTPUT_REPAIRS;
    if (!Number.isInteger(maxOutputRepairs) || maxOutputRepairs < 0)
      problems.push(`maxOutputRepairs must be a whole number ≥ 0, got ${String(maxOutputRepairs)}`);
    problems.push(...delegationProblems(spec));
    if (problems.length > 0) {
      throw new TrellisError(
        'InvalidOptions',
        `Agent spec${spec?.name ? ` '${spec.name}'` : ''} is invalid:\n- ${problems.join('\n- ')}`,
        { hint: 'Fix the fields above in app.agent({ … })' },
      );
    }
    this.output = spec.output === undefined ? undefined : outputSpecOf(spec.output, `Agent '${spec.name}'`);
    // What the agent's models cannot take is refused now, not at the first call: its output DTO, and the tools it sees today (later installs are checked as they come).
    const unsupported = schemaProblems(models as ModelProvider[], this.output, host.registry.view(spec.plugins).tools);
    if (unsupported.length > 0) throw unsupportedSchema(`Agent '${spec.name}'`, unsupported);
    const model: ModelProvider =
      models.length === 1
        ? (models[0] as ModelProvider)
        : new FallbackModel(models as ModelProvider[], {
            onFallback: ({ from, to, error }) =>
              host.events.emit({ type: 'model.fallback', from: from.name, to: to.name, reason: error.message }),
          });
    const nativeOutput = (models as ModelProvider[]).every((m) => schemaDialectOf(m)?.nativeOutput === true);
    this.limits = {
      model,
      maxRounds,
      toolConcurrency,
      maxToolCallsPerRound,
      turnTimeoutMs: spec.turnTimeoutMs,
      inference: spec.inference,
      streamText: spec.streamText ?? 'live',
      maxOutputRepairs,
      nativeOutput,
    };
  }

  /**
   * Opens (or returns the open) session with this id; a new id is made when none is given.
   * Context given here is the host's statement about the session from now on: reopening an
   * open session with other context replaces the old.
   */
  session(id: string = randomUUID(), options: SessionOptions = {}): Session<TOutput> {
    assertSessionId(id);
    let session = this.#sessions.get(id);
    if (!session) {
      session = new Session(this.#host, this, id, options.context ?? {});
      this.#sessions.add(id, session);
    } else if (options.context !== undefined) {
      session.restate(options.context);
    }
    // The type parameter only types `result.output`: one session class serves every agent.
    return session as Session<TOutput>;
  }

  /** @internal The kernel's handle on this agent for delegation: its sessions' delegation handles. */
  [DELEGATE](): DelegateAgent {
    return {
      spec: this.spec,
      limits: this.limits,
      output: this.output,
      forget: (id) => this.forget(id),
      session: (id, options) => this.session(id, options)[DELEGATE](),
    };
  }

  /** @internal Called when a session ends. */
  forget(id: string): void {
    this.#sessions.delete(id);
  }
}

// Sealed: a plugin in the same process cannot patch Agent's methods to capture sessions or transcripts (issue 34).
Object.freeze(Agent.prototype);
Object.freeze(Agent);
