import {
  auditLog,
  AUTH,
  counters,
  FINAL_REPLY,
  HELD_ECHO,
  hold,
  LOOKUP,
  NOTE,
  ROUNDS_PER_TURN,
  scriptReply,
  TOOL_ROUNDS,
} from './workload.js';

/**
 * The same turn written by hand with plain functions and arrays, as a user would without
 * a framework: the same script, 3 async middleware around each call, the note appended
 * to each request, arguments encoded and parsed as JSON, results as tool messages.
 */
interface Message {
  readonly role: 'system' | 'user' | 'assistant' | 'tool';
  readonly content: string;
  readonly toolCalls?: readonly Call[];
  readonly toolCallId?: string;
}
interface Call {
  readonly id: string;
  readonly name: string;
  readonly arguments: string;
}
interface Invocation {
  readonly callId: string;
  readonly tool: string;
  readonly args: Record<string, unknown>;
  readonly context: ReadonlyMap<string, unknown>;
  readonly attempt: number;
}
type Result =
  { ok: true; value: unknown } | { ok: false; error: { code: string; message: string; retryable: boolean } };
type Next = (changed?: Invocation) => Promise<Result>;
type Layer = (call: Invocation, next: Next) => Promise<Result>;

const tools: Record<string, (args: Record<string, unknown>) => unknown> = {
  'bench.add': (args) => {
    if (typeof args['a'] !== 'number' || typeof args['b'] !== 'number') throw new Error('a and b must be numbers');
    counters.tools++;
    return args['a'] + args['b'];
  },
  'bench.echo': async (args) => {
    if (typeof args['text'] !== 'string') throw new Error('text must be a string');
    counters.tools++;
    if (hold.enabled && args['text'] === HELD_ECHO) {
      hold.waiting++;
      await hold.gate;
    }
    return args['text'];
  },
  'bench.lookup': (args) => {
    if (typeof args['key'] !== 'string') throw new Error('key must be a string');
    counters.tools++;
    return LOOKUP.get(args['key']);
  },
};

const layers: Layer[] = [
  async (call, next) => {
    counters.middleware++;
    if (auditLog.length >= 1024) auditLog.length = 0;
    auditLog.push({ tool: call.tool, callId: call.callId, attempt: call.attempt });
    return next();
  },
  async (call, next) => {
    counters.middleware++;
    const auth = call.context.get('app.auth') as { allowed: boolean } | undefined;
    if (!auth?.allowed) return { ok: false, error: { code: 'Forbidden', message: 'not allowed', retryable: false } };
    return next();
  },
  async (call, next) => {
    counters.middleware++;
    for (let attempt = 1; ; attempt++) {
      const result = await next(attempt === 1 ? undefined : { ...call, attempt });
      if (result.ok || !result.error.retryable || attempt >= 2) return result;
    }
  },
];

function runLayers(call: Invocation, index: number): Promise<Result> {
  if (index === layers.length) {
    return (async () => {
      try {
        return { ok: true as const, value: await tools[call.tool]!(call.args) };
      } catch (error) {
        return { ok: false as const, error: { code: 'ToolFailed', message: String(error), retryable: false } };
      }
    })();
  }
  return layers[index]!(call, (changed) => runLayers(changed ?? call, index + 1));
}

let nextId = 1;

async function model(messages: readonly Message[]): Promise<{ text: string; toolCalls: Call[] }> {
  const reply = scriptReply(messages);
  if (typeof reply === 'string') return { text: reply, toolCalls: [] };
  const toolCalls = (reply.toolCalls ?? []).map((c) => ({
    id: c.id ?? `call_${nextId++}`,
    name: c.name,
    arguments: JSON.stringify(c.args),
  }));
  return { text: reply.text ?? '', toolCalls };
}

function transform(messages: readonly Message[]): Message[] {
  counters.transforms++;
  return [...messages, { role: 'system', content: NOTE }];
}

/** One turn; returns the number of rounds. */
export async function handTurn(input: string): Promise<number> {
  const context = new Map<string, unknown>([['app.auth', AUTH]]);
  const turn: Message[] = [{ role: 'user', content: input }];
  for (let round = 1; round <= ROUNDS_PER_TURN + 4; round++) {
    const request = transform([{ role: 'system', content: 'You run the benchmark script.' }, ...turn]);
    const response = await model(request);
    turn.push({
      role: 'assistant',
      content: response.text,
      toolCalls: response.toolCalls.length > 0 ? response.toolCalls : undefined,
    });
    if (response.toolCalls.length === 0) {
      if (response.text !== FINAL_REPLY || round !== ROUNDS_PER_TURN) throw new Error('hand loop: wrong reply');
      return round;
    }
    for (const call of response.toolCalls) {
      const args = JSON.parse(call.arguments) as Record<string, unknown>;
      const result = await runLayers({ callId: call.id, tool: call.name, args, context, attempt: 1 }, 0);
      const content = !result.ok
        ? JSON.stringify({ error: result.error })
        : typeof result.value === 'string'
          ? result.value
          : JSON.stringify(result.value ?? null);
      turn.push({ role: 'tool', toolCallId: call.id, content });
    }
  }
  throw new Error(`hand loop: no answer after ${TOOL_ROUNDS} tool rounds`);
}
