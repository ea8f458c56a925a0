import { A2A_PROTOCOL_VERSION, type AgentCard, type AgentSkill } from '@a2a-js/sdk';
import type { Agent, Trellis } from '../../../index.js';

/** What an agent card says beyond what the agent and app know. */
export interface AgentCardOptions {
  /** The JSON-RPC endpoint clients post to. */
  readonly url: string;
  /** Default: the agent's instructions' first line. */
  readonly description?: string;
  readonly version?: string;
  readonly provider?: { readonly organization: string; readonly url: string };
}

/**
 * The A2A agent card of a Trellis agent: its name, a description, streaming, and one skill
 * per tool the agent can use (the tools of its `plugins`, or of every plugin), described by
 * the tool's own description.
 */
export function agentCardOf(app: Trellis, agent: Agent, options: AgentCardOptions): AgentCard {
  const active = agent.spec.plugins ?? [];
  const skills: AgentSkill[] = app
    .describe()
    .plugins.filter((p) => p.enabled && (active.length === 0 || active.includes(p.name)))
    .flatMap((p) =>
      p.tools
        .filter((t) => !t.tags.includes('internal'))
        .map((t) => ({
          id: t.name,
          name: t.name,
          description: t.description,
          tags: [p.name, ...t.tags],
          examples: [],
          inputModes: ['text/plain'],
          outputModes: ['text/plain', 'application/json'],
          securityRequirements: [],
        })),
    );
  return {
    name: agent.spec.name,
    description:
      options.description ??
      (agent.spec.instructions.split('\n')[0]?.trim() || `The Trellis agent '${agent.spec.name}'`),
    supportedInterfaces: [
      { url: options.url, protocolBinding: 'JSONRPC', tenant: '', protocolVersion: A2A_PROTOCOL_VERSION },
    ],
    provider: options.provider ? { ...options.provider } : undefined,
    version: options.version ?? '1.0.0',
    capabilities: { streaming: true, pushNotifications: false, extensions: [], extendedAgentCard: false },
    securitySchemes: {},
    securityRequirements: [],
    defaultInputModes: ['text/plain', 'application/json'],
    defaultOutputModes: ['text/plain', 'application/json'],
    skills,
    signatures: [],
  };
}
