import { randomUUID } from 'node:crypto';
import type { Agent, ModelProvider, PendingApproval, Session, Trellis } from '../../../../index.js';
import type { CallToolResult, Server } from '../sdk.js';
import { ProtocolError } from './protocol-error.js';

/** JSON-RPC error code of a call a `tool.gate` suspended and no human decided in time. */
export const APPROVAL_REQUIRED = -32010;

/** How a served call that a gate parks is decided. */
export interface ServedApprovalOptions {
  /**
   * How long a parked call waits for a decision made elsewhere (`trellis resume`, the dev
   * page, the API) before the call is answered `APPROVAL_REQUIRED`; the call stays parked
   * and decidable. Default 10 minutes.
   */
  readonly waitMs?: number;
  /** How often the store is read for that decision. Default 500 ms. */
  readonly pollMs?: number;
  /**
   * The agent name the parked calls' sessions belong to: whoever decides them opens the
   * session through an agent of that name (a session belongs to one agent). `trellis mcp`
   * uses the config's agent, so `trellis resume` decides them. Default: the served agent's.
   */
  readonly agentName?: string;
}

/** What deciding a served call needs from the connection. */
export interface ApprovalSite {
  readonly app: Trellis;
  readonly server: Server;
  /** The agent whose plugins the call runs with. */
  readonly agent: Agent;
  /** The MCP client's id, for the parked call's session id. */
  readonly clientId: string;
  readonly context: Readonly<Record<string, unknown>>;
  /**
   * Whether the connection can carry a request to the client during the call: stdio can;
   * stateless HTTP cannot (the client's answer would reach another server instance).
   */
  readonly canElicit: boolean;
  /** Runs the call again, approved: the gate is not asked twice. */
  runApproved(args: unknown): Promise<CallToolResult>;
  readonly options: ServedApprovalOptions;
}

/** The text a parked call's session starts with: what the MCP client asked for, as JSON after it. */
const CALL_MARK = 'An MCP client called this tool, which needs a decision: ';

/**
 * Decides a call the gate parked. When the client can answer elicitation, it asks the human
 * there (approve / reject / edit the arguments, as the ticket allows) and answers the call.
 * Otherwise the call is parked in a session of its own (id `<client>:approval-<uuid>`, in
 * the app's store), decidable like any suspended turn — `trellis resume <session> --approve
 * <call>`, the dev page, `session.resume` — and the request waits for that decision (with
 * progress notifications when the client asked for them), then answers with the call's
 * result; past `waitMs` it answers `APPROVAL_REQUIRED` naming the session and call.
 */
export async function decideServedCall(
  site: ApprovalSite,
  tool: string,
  args: Record<string, unknown>,
  pending: PendingApproval,
  extra: RequestExtra,
): Promise<CallToolResult> {
  const allowed = (pending.ticket.allowedDecisions ?? ['approve', 'reject', 'edit']).filter(
    (d) => d === 'approve' || d === 'reject' || d === 'edit',
  );
  if (site.canElicit && site.server.getClientCapabilities()?.elicitation && allowed.length > 0) {
    const decided = await elicit(site, tool, args, pending, allowed, extra).catch(() => undefined);
    if (decided) return decided;
  }
  return park(site, tool, args, extra);
}

/** What the SDK hands a request handler, as far as this file uses it. */
export interface RequestExtra {
  readonly signal: AbortSignal;
  readonly _meta?: { readonly progressToken?: string | number };
  sendNotification(notification: {
    method: 'notifications/progress';
    params: { progressToken: string | number; progress: number; message?: string };
  }): Promise<void>;
}

async function elicit(
  site: ApprovalSite,
  tool: string,
  args: Record<string, unknown>,
  pending: PendingApproval,
  allowed: readonly string[],
  extra: RequestExtra,
): Promise<CallToolResult> {
  const properties: Record<string, unknown> = {
    decision: {
      type: 'string',
      title: 'Decision',
      enum: allowed,
      description: 'approve runs the call, reject never runs it',
    },
    reason: { type: 'string', title: 'Reason', description: 'With reject: what the model is told' },
  };
  if (allowed.includes('edit'))
    properties.arguments = {
      type: 'string',
      title: 'Edited arguments (JSON)',
      description: 'With edit: the arguments to run the call with instead',
    };
  const answer = await site.server.elicitInput(
    {
      message: `${tool} needs your approval: ${pending.ticket.message}\nArguments: ${JSON.stringify(args)}`,
      requestedSchema: { type: 'object', properties, required: ['decision'] } as never,
    },
    { signal: extra.signal, timeout: site.options.waitMs ?? 600_000 },
  );
  const content = (answer.content ?? {}) as { decision?: unknown; reason?: unknown; arguments?: unknown };
  if (answer.action === 'accept' && content.decision === 'approve') return site.runApproved(args);
  if (answer.action === 'accept' && content.decision === 'edit' && allowed.includes('edit')) {
    let edited: unknown;
    try {
      edited = JSON.parse(String(content.arguments ?? ''));
    } catch {
      return errorResult('ToolInput', 'The edited arguments are not JSON; the call did not run');
    }
    if (typeof edited !== 'object' || edited === null || Array.isArray(edited))
      return errorResult('ToolInput', 'The edited arguments must be a JSON object; the call did not run');
    return site.runApproved(edited);
  }
  const why =
    answer.action === 'accept'
      ? typeof content.reason === 'string' && content.reason
        ? content.reason
        : 'A human rejected this call'
      : `The user ${answer.action === 'decline' ? 'declined' : 'cancelled'} the approval`;
  return errorResult('Rejected', `${why}; it did not run`);
}

/** One agent per served agent runs the parked calls' sessions: its plugins, the call-replaying model. */
const parkingAgents = new WeakMap<Agent, Map<string, Agent>>();

async function park(
  site: ApprovalSite,
  tool: string,
  args: Record<string, unknown>,
  extra: RequestExtra,
): Promise<CallToolResult> {
  const name = site.options.agentName ?? site.agent.spec.name;
  const byName = parkingAgents.get(site.agent) ?? new Map<string, Agent>();
  parkingAgents.set(site.agent, byName);
  let agent = byName.get(name);
  if (!agent) {
    agent = site.app.agent({
      ...site.agent.spec,
      name,
      model: servedCallModel(),
      agents: undefined,
      handoffs: undefined,
    });
    byName.set(name, agent);
  }
  const session = agent.session(`${site.clientId}:approval-${randomUUID()}`, { context: site.context });
  const parked = await session.send(`${CALL_MARK}${JSON.stringify({ tool, args })}`, { context: site.context });
  const call = parked.suspended?.[0];
  if (parked.status !== 'suspended' || !call) return answerOf(session, parked.toolCalls[0]?.callId);
  const token = extra._meta?.progressToken;
  const until = Date.now() + (site.options.waitMs ?? 600_000);
  let progress = 0;
  for (;;) {
    if (extra.signal.aborted) break;
    if ((await session.pending()).length === 0) return answerOf(session, call.callId);
    if (Date.now() >= until) break;
    if (token !== undefined) {
      await extra
        .sendNotification({
          method: 'notifications/progress',
          params: {
            progressToken: token,
            progress: ++progress,
            message: `Waiting for a decision on ${tool} (session ${session.id}, call ${call.callId})`,
          },
        })
        .catch(() => undefined);
    }
    await sleep(site.options.pollMs ?? 500, extra.signal);
  }
  throw new ProtocolError(
    APPROVAL_REQUIRED,
    `Approval required: ${tool} was suspended by a gate (${call.ticket.message}) and is parked in session ${session.id} as call ${call.callId}. It did not run; decide it with: trellis resume ${session.id} --approve ${call.callId} (or --reject), the dev page or session.resume`,
    { code: 'ApprovalRequired', sessionId: session.id, callId: call.callId },
  );
}

/** The decided call's result, from the parked session's transcript (written wherever it was decided). */
function answerOf(session: Session, callId: string | undefined): CallToolResult {
  const message = [...session.transcript].reverse().find((m) => m.role === 'tool' && m.toolCallId === callId);
  if (!message) return errorResult('Cancelled', 'The call was withdrawn without a result');
  let parsed: unknown;
  try {
    parsed = JSON.parse(message.content);
  } catch {
    return { content: [{ type: 'text', text: message.content }] };
  }
  const error = (parsed as { error?: { code?: unknown } } | null)?.error;
  if (error && typeof error.code === 'string')
    return { isError: true, content: [{ type: 'text', text: message.content }] };
  return { content: [{ type: 'text', text: message.content }] };
}

function errorResult(code: string, message: string): CallToolResult {
  return {
    isError: true,
    content: [{ type: 'text', text: JSON.stringify({ error: { code, message, retryable: false } }) }],
  };
}

/**
 * The model of a parked call's session: it asks for exactly the call the MCP client made
 * (read back from the session's first message, so it works in any process), and once the
 * call has an answer it ends the turn with that answer.
 */
export function servedCallModel(): ModelProvider {
  return {
    name: 'mcp-served-call',
    async call(request) {
      const last = request.messages.at(-1);
      const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
      if (last?.role === 'user' && last.content.startsWith(CALL_MARK)) {
        const { tool, args } = JSON.parse(last.content.slice(CALL_MARK.length)) as { tool: string; args: unknown };
        return {
          text: '',
          toolCalls: [{ id: `mcp_${randomUUID()}`, name: tool, arguments: JSON.stringify(args ?? {}) }],
          usage,
          model: 'mcp-served-call',
        };
      }
      return { text: last?.content ?? '', toolCalls: [], usage, model: 'mcp-served-call' };
    },
  };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(done, ms);
    function done() {
      clearTimeout(timer);
      signal.removeEventListener('abort', done);
      resolve();
    }
    signal.addEventListener('abort', done, { once: true });
  });
}
