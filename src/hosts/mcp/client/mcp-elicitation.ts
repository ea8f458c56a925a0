import { randomUUID } from 'node:crypto';
import {
  done,
  suspend,
  TrellisError,
  type Agent,
  type HookContext,
  type ModelProvider,
  type Session,
  type ToolCallInfo,
  type ToolContext,
  type Trellis,
} from '../../../../index.js';
import { KERNEL_KEYS, type HookResult, type ToolCandidate } from '../../../../plugin.js';
import { compileJsonSchema, type SchemaValidator } from '../../../engine/validation/json-schema-validator.js';

/**
 * How a server's elicitation (a question it asks a human in the middle of a tool call) is put
 * to a human through Trellis's approvals: parked as a suspended call of a session of its own,
 * decided like any other (`trellis resume`, the dev page, the Nest sessions API,
 * `session.resume`), while the server's request waits. See docs/mcp.md.
 */
export interface McpElicitationOptions {
  /**
   * The agent the parked questions' sessions belong to: whoever decides opens the session
   * through an agent of this name whose plugins include the server's. The `trellis` CLI
   * passes its config's agent. Default `mcp-elicitation`.
   */
  readonly agentName?: string;
  /**
   * How long a question waits for a decision before the server is answered `cancel` (and the
   * question withdrawn). Default 10 minutes; the server's own request timeout (often 60 s
   * with the SDK's defaults) may end it sooner, which withdraws it too.
   */
  readonly waitMs?: number;
  /** How often the store is read for the decision. Default 500 ms. */
  readonly pollMs?: number;
  /** Told where each question waits, e.g. to notify the human who should answer it. */
  readonly onParked?: (parked: ParkedElicitation) => void;
}

/** A server's question, parked for a human. */
export interface ParkedElicitation {
  readonly server: string;
  /** The server's question. */
  readonly message: string;
  /** The session it waits in (decide it there) and its call. */
  readonly sessionId: string;
  readonly callId: string;
  /** What `approve` answers; undefined when the form has fields only an `edit` can fill in. */
  readonly proposal: Readonly<Record<string, unknown>> | undefined;
  readonly allowedDecisions: readonly ('approve' | 'edit' | 'reject')[];
  /** The Trellis session whose tool call the server asked during, when only one call was running. */
  readonly callerSessionId?: string;
}

/** Who made the tool calls running on the server's connection when its question came. */
export interface ElicitationCaller {
  readonly sessionId: string;
  readonly owner: string | undefined;
}

/** The parked session's first message: this mark, then the question as JSON. */
const MARK = 'An MCP server asks a human (answer with a decision on the call below): ';
const MAX_MESSAGE = 4000;

/** The question as the parked session keeps it (its first message), readable in any process. */
interface Question {
  readonly server: string;
  readonly tool: string;
  readonly message: string;
  readonly requestedSchema?: Readonly<Record<string, unknown>>;
  readonly proposal?: Readonly<Record<string, unknown>>;
  readonly allowed: readonly ('approve' | 'edit' | 'reject')[];
  /** Why the last answer was refused, when it is asked again. */
  readonly retry?: string;
}

function questionOf(input: unknown): Question | undefined {
  if (typeof input !== 'string' || !input.startsWith(MARK)) return undefined;
  try {
    const question = JSON.parse(input.slice(MARK.length)) as Question;
    return typeof question.tool === 'string' && typeof question.message === 'string' ? question : undefined;
  } catch {
    return undefined;
  }
}

/** The ticket a human reads: the server's question, the fields, what each decision does. */
function ticketMessage(question: Question): string {
  const fields = Object.entries(
    (question.requestedSchema?.properties ?? {}) as Record<
      string,
      { type?: unknown; title?: unknown; description?: unknown; enum?: unknown }
    >,
  ).map(([name, field]) => {
    const required = ((question.requestedSchema?.required ?? []) as unknown[]).includes(name) ? ', required' : '';
    const choices = Array.isArray(field.enum) ? `, one of ${field.enum.map((v) => JSON.stringify(v)).join(' | ')}` : '';
    const label = [field.title, field.description].filter((v) => typeof v === 'string' && v !== '').join(': ');
    return `  ${name} (${String(field.type ?? 'any')}${required}${choices})${label ? ` ${label}` : ''}`;
  });
  const lines = [`MCP server '${question.server}' asks: ${question.message}`];
  if (question.retry) lines.push(`(asked again: ${question.retry})`);
  if (fields.length > 0) lines.push('Fields:', ...fields);
  lines.push(
    question.allowed.includes('approve')
      ? 'Approve to answer with the arguments shown; edit to answer with other values; reject to decline.'
      : 'Edit to answer with the fields filled in (JSON object); reject to decline.',
  );
  return lines.join('\n');
}

/**
 * What `approve` answers: each field's `default`, and `true` for a required yes/no field
 * without one (approving a yes/no question says yes). Undefined when that does not fit the form.
 */
function proposalOf(
  schema: Readonly<Record<string, unknown>> | undefined,
  check: SchemaValidator | undefined,
): Record<string, unknown> | undefined {
  if (!schema) return {};
  const required = new Set((Array.isArray(schema.required) ? schema.required : []) as unknown[]);
  const proposal: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(
    (schema.properties ?? {}) as Record<string, { type?: unknown; default?: unknown }>,
  )) {
    if (field?.default !== undefined) proposal[name] = field.default;
    else if (field?.type === 'boolean' && required.has(name)) proposal[name] = true;
  }
  return check?.(proposal).ok === false ? undefined : proposal;
}

function problemText(check: SchemaValidator, content: unknown): string | undefined {
  const checked = check(content);
  if (checked.ok) return undefined;
  return checked.errors.map((e) => `${e.path || 'the answer'}: ${e.messages.join(', ')}`).join('; ');
}

/**
 * The hidden tool of an MCP server's plugin that carries a parked question's answer: the
 * gate parks its call with the server's question; approved (or edited), it checks the answer
 * against the server's form and ends the turn with it (`done`, so no model is asked after).
 */
export function elicitationTool(): (args: unknown, ctx: ToolContext) => HookResult {
  return (args, ctx) => {
    const question = questionOf(ctx.get(KERNEL_KEYS.turnInput));
    if (!question)
      return done({
        invalid: 'This call answers a question an MCP server asked; it runs only in the session that holds it',
      });
    if (question.requestedSchema) {
      const problem = problemText(
        compileJsonSchema(question.requestedSchema, `the form of MCP server '${question.server}'`),
        args,
      );
      if (problem) return done({ invalid: problem });
    }
    return done({ answer: 'accept', content: args });
  };
}

/** The gate of the hidden tool: its call waits for a human with the server's question. */
export function elicitationGate(tool: () => string): (call: ToolCallInfo, ctx: HookContext) => HookResult | undefined {
  return (call, ctx) => {
    if (call.tool !== tool()) return undefined;
    const question = questionOf(ctx.get(KERNEL_KEYS.turnInput));
    if (!question)
      return suspend({ message: 'An MCP server question without its text: reject it', allowedDecisions: ['reject'] });
    return suspend({ message: ticketMessage(question), allowedDecisions: [...question.allowed] });
  };
}

/** Session ids of parked questions contain this: only there is the hidden tool offered to the model. */
const PARKED = ':elicitation-';

/** Keeps the hidden tool from every model but a parked question's. */
export function elicitationSelect(
  tool: () => string,
): (candidates: readonly ToolCandidate[], ctx: HookContext) => readonly ToolCandidate[] {
  return (candidates, ctx) =>
    ctx.sessionId.includes(PARKED) ? candidates : candidates.filter((c) => c.name !== tool());
}

/** The model of a parked question's session: it asks for the hidden tool's call, with the proposal as its arguments. */
function elicitationModel(): ModelProvider {
  return {
    name: 'mcp-elicitation',
    async call(request) {
      const usage = { inputTokens: 0, outputTokens: 0, totalTokens: 0 };
      const last = request.messages.at(-1);
      const question = last?.role === 'user' ? questionOf(last.content) : undefined;
      if (question)
        return {
          text: '',
          toolCalls: [
            { id: `elicit_${randomUUID()}`, name: question.tool, arguments: JSON.stringify(question.proposal ?? {}) },
          ],
          usage,
          model: 'mcp-elicitation',
        };
      return { text: 'The question was answered.', toolCalls: [], usage, model: 'mcp-elicitation' };
    },
  };
}

/** What an elicitation came to: the answer to the server. */
export type ElicitationAnswer =
  | { readonly action: 'accept'; readonly content: Readonly<Record<string, unknown>> }
  | { readonly action: 'decline' | 'cancel' };

/** Where the server's request stands: its signal, and how to keep it from timing out while a human decides. */
export interface ElicitationRequest {
  readonly message: string;
  readonly requestedSchema?: Readonly<Record<string, unknown>>;
  readonly signal: AbortSignal;
  /** Sends a progress notification for the server's request, when it asked for them. */
  readonly progress?: (note: string) => Promise<void>;
}

/**
 * Parks servers' questions as suspended calls, one session per question, and waits for the
 * decision: `approve` / `edit` answer `accept` with the arguments (checked against the form;
 * an answer that does not fit is asked again), `reject` answers `decline`, a withdrawn
 * question (`cancelPending`, the server giving up, `waitMs` passing) answers `cancel`.
 */
export class ElicitationParking {
  #agent: Agent | undefined;

  constructor(
    private readonly app: Trellis,
    private readonly server: string,
    /** The plugin of the server (the parked sessions' agent needs its tool and gate), and the hidden tool's name. */
    private readonly plugin: string,
    private readonly tool: () => string,
    private readonly options: McpElicitationOptions = {},
  ) {}

  /** Puts the server's question to a human and answers with their decision. */
  async ask(request: ElicitationRequest, callers: readonly ElicitationCaller[]): Promise<ElicitationAnswer> {
    let check: SchemaValidator | undefined;
    if (request.requestedSchema) {
      try {
        check = compileJsonSchema(request.requestedSchema, `the form of MCP server '${this.server}'`);
      } catch {
        // A form nobody can check cannot be answered safely.
        return { action: 'decline' };
      }
    }
    const proposal = proposalOf(request.requestedSchema, check);
    const allowed: Question['allowed'] = proposal ? ['approve', 'edit', 'reject'] : ['edit', 'reject'];
    // One running call: the question is its caller's (its session, its owner). Several: the owner when they share one.
    const caller = callers.length === 1 ? callers[0] : undefined;
    const owners = new Set(callers.map((c) => c.owner));
    const owner = owners.size === 1 ? [...owners][0] : undefined;
    const until = Date.now() + (this.options.waitMs ?? 600_000);
    let retry: string | undefined;
    for (;;) {
      const question: Question = {
        server: this.server,
        tool: this.tool(),
        message: request.message.slice(0, MAX_MESSAGE),
        requestedSchema: request.requestedSchema,
        proposal,
        allowed,
        ...(retry && { retry }),
      };
      const session = this.agent().session(`${caller?.sessionId ?? `mcp-${this.server}`}${PARKED}${randomUUID()}`);
      const parked = await session.send(`${MARK}${JSON.stringify(question)}`, {
        signal: request.signal,
        ...(owner !== undefined && { access: { principal: owner, owner: null } }),
      });
      const call = parked.suspended?.[0];
      if (parked.status !== 'suspended' || !call) return { action: 'cancel' };
      this.options.onParked?.({
        server: this.server,
        message: question.message,
        sessionId: session.id,
        callId: call.callId,
        proposal,
        allowedDecisions: allowed,
        ...(caller && { callerSessionId: caller.sessionId }),
      });
      const answer = await this.decision(session, call.callId, request, until);
      if (answer === undefined) {
        // Nobody decided in time, or the server gave up: nobody may decide it later.
        await session.cancelPending().catch(() => undefined);
        return { action: 'cancel' };
      }
      if ('invalid' in answer) {
        retry = answer.invalid;
        if (Date.now() < until && !request.signal.aborted) continue;
        return { action: 'cancel' };
      }
      return answer;
    }
  }

  /** The decision on the parked call, read from its session once it is made; undefined past the deadline or once the server gave up. */
  private async decision(
    session: Session,
    callId: string,
    request: ElicitationRequest,
    until: number,
  ): Promise<ElicitationAnswer | { invalid: string } | undefined> {
    for (;;) {
      if (request.signal.aborted) return undefined;
      if ((await session.pending()).length === 0) return answerOf(session, callId);
      if (Date.now() >= until) return undefined;
      await request
        .progress?.(`Waiting for a human to answer (session ${session.id}, call ${callId})`)
        .catch(() => undefined);
      await sleep(this.options.pollMs ?? 500, request.signal);
    }
  }

  private agent(): Agent {
    return (this.#agent ??= this.app.agent({
      name: this.options.agentName ?? 'mcp-elicitation',
      model: elicitationModel(),
      instructions: '',
      plugins: [this.plugin],
      maxRounds: 2,
    }));
  }
}

/** The answer the parked call's session recorded (wherever it was decided). */
function answerOf(session: Session, callId: string): ElicitationAnswer | { invalid: string } {
  const message = [...session.transcript].reverse().find((m) => m.role === 'tool' && m.toolCallId === callId);
  let value: { answer?: unknown; content?: unknown; invalid?: unknown; error?: { code?: unknown } } | undefined;
  try {
    value = message ? (JSON.parse(message.content) as typeof value) : undefined;
  } catch {
    value = undefined;
  }
  if (value?.error?.code === 'Rejected') return { action: 'decline' };
  if (typeof value?.invalid === 'string') return { invalid: value.invalid };
  if (
    value?.answer === 'accept' &&
    typeof value.content === 'object' &&
    value.content !== null &&
    !Array.isArray(value.content)
  )
    return { action: 'accept', content: value.content as Record<string, unknown> };
  return { action: 'cancel' };
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    const timer = setTimeout(finish, ms);
    function finish() {
      clearTimeout(timer);
      signal.removeEventListener('abort', finish);
      resolve();
    }
    signal.addEventListener('abort', finish, { once: true });
  });
}

/** What is wrong with the `elicitation` option, as the error to throw; undefined when nothing is. */
export function elicitationOptionsProblem(options: unknown): TrellisError | undefined {
  if (options === undefined || options === false) return undefined;
  const o = options as Record<string, unknown> | null;
  const bad =
    typeof o !== 'object' ||
    o === null ||
    (o.agentName !== undefined && (typeof o.agentName !== 'string' || o.agentName === '')) ||
    (o.waitMs !== undefined && !(Number.isInteger(o.waitMs) && (o.waitMs as number) > 0)) ||
    (o.pollMs !== undefined && !(Number.isInteger(o.pollMs) && (o.pollMs as number) > 0)) ||
    (o.onParked !== undefined && typeof o.onParked !== 'function');
  return bad
    ? new TrellisError(
        'InvalidOptions',
        'elicitation must be false or { agentName?, waitMs?, pollMs?, onParked? } (a non-empty name, whole positive milliseconds, a function)',
        { hint: 'See docs/mcp.md, "A server asking a human"' },
      )
    : undefined;
}
