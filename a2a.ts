import 'reflect-metadata';

/**
 * A2A for Trellis (`@a2a-js/sdk`, protocol v1.0): `import { serveA2a, A2aAgentClient } from
 * 'trellis/a2a'`. Serve any agent as an A2A agent (agent card, tasks as turns, a suspended
 * turn as `input-required`), and use a remote A2A agent as a tool. A separate entry so that
 * importing `trellis` does not load the A2A SDK and Express. See docs/a2a.md.
 */
import type {} from './src/hosts/a2a/a2a-error-codes.js';
export {
  serveA2a,
  a2aRequestHandler,
  type ServeA2aOptions,
  type A2aServing,
  type A2aHandlerOptions,
} from './src/hosts/a2a/serve-a2a.js';
export { agentCardOf, type AgentCardOptions } from './src/hosts/a2a/agent-card.js';
export { TrellisAgentExecutor, type A2aSessionResolver } from './src/hosts/a2a/trellis-agent-executor.js';
export { a2aAgent, A2aRemoteAgent, type A2aAgentOptions } from './src/hosts/a2a/a2a-remote-agent.js';
export {
  A2aAgentClient,
  AskRemoteAgent,
  type A2aClientOptions,
  type RemoteAgentAnswer,
} from './src/hosts/a2a/a2a-agent-client.js';
export { streamable, type TurnSession } from './src/hosts/ui-turns/turn-session.js';
