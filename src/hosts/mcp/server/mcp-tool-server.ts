import type { Agent } from '../../../../index.js';
import type { Session } from '../../../../index.js';
import type { DirectCallResult, Trellis } from '../../../../index.js';
import { TrellisError } from '../../../../index.js';
import { ProtocolError } from './protocol-error.js';
import {
  APPROVAL_REQUIRED,
  decideServedCall,
  type ApprovalSite,
  type ServedApprovalOptions,
} from './served-approval.js';
import {
  CallToolRequestSchema,
  ErrorCode,
  ListToolsRequestSchema,
  Server,
  type CallToolResult,
  type McpToolDescription,
} from '../sdk.js';

/** What one MCP connection (stdio) or request (stateless HTTP) serves. */
export interface McpToolHost {
  readonly app: Trellis;
  /** The agent whose sessions run tool calls: its `plugins` filter decides which tools exist. */
  readonly agent: Agent;
  /** Exposed tool names: exact names or globs (`orders.*`); empty or absent: all. */
  readonly allow?: readonly string[];
  /** Agents exposed as one `ask_<name>` tool each, running a whole turn. */
  readonly ask?: readonly Agent[];
  readonly name: string;
  readonly version: string;
  /** How a call a gate parks is decided (elicitation, or parked and waited for). */
  readonly approvals?: ServedApprovalOptions;
  /** Whether the connection can send requests to the client mid-call (stdio: yes; stateless HTTP: no). */
  readonly canElicit?: boolean;
}

/** Sessions of one MCP client session: opened on first use, ended with the connection. */
export class McpClientSessions {
  private readonly open = new Map<Agent, Session>();

  constructor(
    private readonly id: string,
    private readonly context: Readonly<Record<string, unknown>>,
  ) {}

  /** This client's id: its sessions' ids start with it. */
  get clientId(): string {
    return this.id;
  }

  /** Host context for this client (e.g. mapped from its bearer token). */
  get hostContext(): Readonly<Record<string, unknown>> {
    return this.context;
  }

  of(agent: Agent): Session {
    let session = this.open.get(agent);
    if (!session) {
      session = agent.session(`${this.id}:${agent.spec.name}`, { context: this.context });
      this.open.set(agent, session);
    }
    return session;
  }

  async end(): Promise<void> {
    for (const session of this.open.values()) await session.end().catch(() => undefined);
    this.open.clear();
  }
}

/**
 * A low-level MCP `Server` over the app's tools: `tools/list` gives each allowed tool with
 * its JSON Schema (from the DTO, or the raw schema) and description; `tools/call` runs
 * `session.callTool` — gate, permissions, middleware, events. A suspended call is the
 * JSON-RPC error {@link APPROVAL_REQUIRED}; a tool's failure is an `isError` result.
 */
export function createMcpToolServer(host: McpToolHost, sessions: McpClientSessions): Server {
  const server = new Server({ name: host.name, version: host.version }, { capabilities: { tools: {} } });
  const allowed = globs(host.allow ?? []);
  const active = host.agent.spec.plugins ?? [];
  const tools = () =>
    host.app
      .describe()
      .plugins.filter((p) => p.enabled && (active.length === 0 || active.includes(p.name)))
      .flatMap((p) => p.tools)
      // `internal` tools carry answers inside Trellis (an MCP server's question): never served.
      .filter((t) => allowed(t.name) && !t.tags.includes('internal'));
  const askTools = new Map(
    (host.ask ?? []).map((agent) => [`ask_${agent.spec.name.replace(/[^A-Za-z0-9_.-]/g, '_')}`, agent]),
  );

  server.setRequestHandler(ListToolsRequestSchema, () => ({
    tools: [
      ...tools().map((t): McpToolDescription => ({
        name: t.name,
        description: t.description,
        inputSchema: t.inputSchema as McpToolDescription['inputSchema'],
      })),
      ...[...askTools].map(([name, agent]): McpToolDescription => ({
        name,
        description: `Ask the '${agent.spec.name}' agent: it runs a whole turn (its own model and tools) and answers in text.`,
        inputSchema: {
          type: 'object',
          properties: { message: { type: 'string', description: 'What to ask' } },
          required: ['message'],
          additionalProperties: false,
        },
      })),
    ],
  }));

  server.setRequestHandler(CallToolRequestSchema, async (request, extra): Promise<CallToolResult> => {
    const { name, arguments: args = {} } = request.params;
    const agent = askTools.get(name);
    if (agent) return askAgent(sessions.of(agent), args, extra.signal, sessions.hostContext);
    if (!tools().some((t) => t.name === name))
      throw new ProtocolError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const call = (input: unknown, approved: boolean) =>
      sessions.of(host.agent).callTool(name, input, { signal: extra.signal, context: sessions.hostContext, approved });
    const result = await call(args, false);
    if (result.status !== 'suspended') return callResult(result);
    const site: ApprovalSite = {
      app: host.app,
      server,
      agent: host.agent,
      clientId: sessions.clientId,
      context: sessions.hostContext,
      options: host.approvals ?? {},
      canElicit: host.canElicit === true,
      runApproved: async (input) => callResult(await call(input, true)),
    };
    return decideServedCall(site, name, args, result.pending, extra);
  });
  return server;
}

/** A direct call's outcome as an MCP tool result; a suspension is decided before it gets here. */
function callResult(result: DirectCallResult): CallToolResult {
  switch (result.status) {
    case 'ok':
      return {
        content: [
          {
            type: 'text',
            text: typeof result.value === 'string' ? result.value : JSON.stringify(result.value ?? null),
          },
        ],
      };
    case 'error':
      return { isError: true, content: [{ type: 'text', text: JSON.stringify({ error: result.error }) }] };
    case 'blocked':
      return { isError: true, content: [{ type: 'text', text: `Blocked by ${result.by}: ${result.reason}` }] };
    case 'suspended':
      return {
        isError: true,
        content: [
          {
            type: 'text',
            text: JSON.stringify({
              error: {
                code: 'ApprovalRequired',
                message: `Suspended again by a gate: ${result.pending.ticket.message}`,
                retryable: false,
              },
            }),
          },
        ],
      };
  }
}

async function askAgent(
  session: Session,
  args: Record<string, unknown>,
  signal: AbortSignal,
  context: Readonly<Record<string, unknown>>,
): Promise<CallToolResult> {
  if (typeof args.message !== 'string')
    throw new ProtocolError(ErrorCode.InvalidParams, 'ask_* takes { message: string }');
  const result = await session.send(args.message, { signal, context });
  if (result.status === 'completed') return { content: [{ type: 'text', text: result.reply ?? '' }] };
  if (result.status === 'suspended')
    throw approvalRequired(`the '${session.id}' turn`, result.suspended?.map((p) => p.ticket.message).join('; ') ?? '');
  const why = result.error ? `${result.error.code}: ${result.error.message}` : result.status;
  return { isError: true, content: [{ type: 'text', text: `The turn ended ${result.status}: ${why}` }] };
}

function approvalRequired(what: string, message: string): ProtocolError {
  return new ProtocolError(
    APPROVAL_REQUIRED,
    `Approval required: ${what} was suspended by a gate (${message}). A human must approve it in the Trellis host; it did not run`,
    {
      code: 'ApprovalRequired',
    },
  );
}

/** `orders.*` and exact names; an empty list allows everything. */
function globs(patterns: readonly string[]): (name: string) => boolean {
  if (patterns.length === 0) return () => true;
  const res = patterns.map((p) => new RegExp(`^${p.replace(/[.+?^${}()|[\]\\]/g, '\\$&').replace(/\*/g, '.*')}$`));
  return (name) => res.some((re) => re.test(name));
}

/** The agent that runs served tool calls when none is given: every plugin, and no model (it never runs a turn). */
export function toolOnlyAgent(app: Trellis): Agent {
  return app.agent({
    name: 'mcp',
    instructions: '',
    model: {
      name: 'none',
      call: () =>
        Promise.reject(
          new TrellisError('InvalidOptions', 'The MCP tool agent has no model; it only runs tool calls', {
            hint: 'Pass serveMcp(app, { ask: [agent] }) to expose an agent with a model',
          }),
        ),
    },
  });
}
