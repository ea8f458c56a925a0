import type { Agent, AgentSpec, SessionOptions } from '../../../index.js';
import { HostedSession, type HostedTurns } from './hosted-session.js';

/**
 * An agent as `@InjectAgent(name)` hands it out: its sessions pick up the current request's
 * context on every `send` / `resume`, their turns run where the module says (in process or
 * on the worker queue), and are drained at shutdown.
 *
 * @example
 * constructor(@InjectAgent('support') private readonly support: HostedAgent) {}
 * reply(id: string, text: string) { return this.support.session(id).send(text); }
 */
export class HostedAgent {
  constructor(
    private readonly agent: Agent,
    private readonly turns: HostedTurns,
  ) {}

  /** The agent's spec (name, instructions, plugins, limits). */
  get spec(): AgentSpec {
    return this.agent.spec;
  }

  /** Opens (or returns the open) session with this id; a new id is made when none is given. */
  session(id?: string, options?: SessionOptions): HostedSession {
    return new HostedSession(this.agent.session(id, options), this.agent.spec.name, options?.context, this.turns);
  }
}
