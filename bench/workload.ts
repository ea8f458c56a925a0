import 'reflect-metadata';
import { performance } from 'node:perf_hooks';
import { injectable } from 'inversify';
import { IsNumber, IsString } from 'class-validator';
import {
  Middleware,
  Plugin,
  Tool,
  Transform,
  type ModelRequest,
  type NextToolHandler,
  type ScriptedReply,
  type ToolInvocation,
  type ToolMiddleware,
  type ToolResult,
} from '../index.js';
import type { InferenceRequest } from '../plugin.js';

/**
 * The workload of issue 6, kept exactly so figures compare across versions: 3 tools,
 * 3 middleware around each call, 1 transform, a script of 20 tool rounds and an answer.
 */
export const TOOL_ROUNDS = 20;
export const ROUNDS_PER_TURN = TOOL_ROUNDS + 1;
export const MIDDLEWARE_PER_CALL = 3;
export const NOTE = 'bench: answer briefly.';
export const AUTH_KEY = 'app.auth';
export const AUTH = Object.freeze({ user: 'bench', allowed: true });
export const TOOL_NAMES = ['bench.add', 'bench.echo', 'bench.lookup'] as const;

/** What happened, counted by the workload itself; the bench checks it after every run. */
export const counters = { tools: 0, middleware: 0, transforms: 0, modelCalls: 0, hooks: 0 };

export function resetCounters(): void {
  counters.tools = 0;
  counters.middleware = 0;
  counters.transforms = 0;
  counters.modelCalls = 0;
  counters.hooks = 0;
}

/** The log the logging middleware appends to; bounded so a long run does not grow it. */
export const auditLog: { tool: string; callId: string; attempt: number }[] = [];
const LOG_LIMIT = 1024;

export const LOOKUP = new Map<string, string>([
  ['k0', 'v0'],
  ['k1', 'v1'],
  ['k2', 'v2'],
  ['k3', 'v3'],
  ['k4', 'v4'],
]);

/** Figure 3 holds every turn inside its last tool call until `release()`. */
export const hold = {
  enabled: false,
  waiting: 0,
  gate: Promise.resolve(),
  release: () => {},
  arm(): void {
    this.enabled = true;
    this.waiting = 0;
    this.gate = new Promise<void>((resolve) => (this.release = resolve));
  },
  disarm(): void {
    this.enabled = false;
    this.release();
  },
};

/**
 * While enabled, the script notes the clock (`performance.now()`, ms) at every reply it is
 * asked for: bench/round-times.ts times rounds one by one with it. Off for every other
 * figure, which then pays one property read per round.
 */
export const replyClock = {
  enabled: false,
  count: 0,
  marks: new Float64Array(2 * ROUNDS_PER_TURN),
};

// --- The script: one tool call per round, cycling add, echo, lookup; then an answer.

export interface ScriptStep {
  readonly name: (typeof TOOL_NAMES)[number];
  readonly args: Record<string, unknown>;
  /** The tool message the model should see for it in the next round. */
  readonly expected: string;
}

export const STEPS: readonly ScriptStep[] = Array.from({ length: TOOL_ROUNDS }, (_, i) => {
  switch (i % 3) {
    case 0:
      return { name: 'bench.add', args: { a: i, b: i + 1 }, expected: String(2 * i + 1) };
    case 1:
      return { name: 'bench.echo', args: { text: `echo ${i}` }, expected: `echo ${i}` };
    default:
      return { name: 'bench.lookup', args: { key: `k${i % 5}` }, expected: `v${i % 5}` };
  }
});
let nextCallId = 1;
export const FINAL_REPLY = 'All 20 steps done.';
export const HELD_ECHO = `echo ${TOOL_ROUNDS - 1}`;

/**
 * The model's script as a function of the request, so one model serves concurrent
 * sessions: the step is read from the request's shape (system, user, 2 messages per
 * finished round, the transform's note). It checks the note and the previous result.
 */
export function scriptReply(messages: readonly { role: string; content: string }[]): ScriptedReply {
  if (replyClock.enabled && replyClock.count < replyClock.marks.length)
    replyClock.marks[replyClock.count++] = performance.now();
  counters.modelCalls++;
  const step = (messages.length - 3) / 2;
  const last = messages[messages.length - 1]!;
  if (last.role !== 'system' || last.content !== NOTE)
    throw new Error(`round ${step + 1}: the transform's note is missing`);
  if (step > 0) {
    const previous = messages[messages.length - 2]!;
    if (previous.role !== 'tool' || previous.content !== STEPS[step - 1]!.expected) {
      throw new Error(
        `round ${step + 1}: expected the result '${STEPS[step - 1]!.expected}' of the previous call, got ${previous.role}: '${previous.content}'`,
      );
    }
  }
  if (step === TOOL_ROUNDS) return FINAL_REPLY;
  const next = STEPS[step];
  if (!next) throw new Error(`unexpected request shape: ${messages.length} messages`);
  // Ids unique across the process, as a real model's are (ScriptedModel numbers them per instance).
  return { toolCalls: [{ id: `call_${nextCallId++}`, name: next.name, args: next.args }] };
}

export function scriptFn(request: ModelRequest): ScriptedReply {
  return scriptReply(request.messages);
}

/** `scriptFn` for a session with earlier turns: the script sees the system prompt and this turn's messages only. */
export function sessionScriptFn(request: ModelRequest): ScriptedReply {
  const messages = request.messages;
  let user = messages.length - 1;
  while (user > 0 && messages[user]!.role !== 'user') user--;
  return scriptReply(user <= 1 ? messages : [messages[0]!, ...messages.slice(user)]);
}

// --- Middleware

@injectable()
export class AuditLogMiddleware implements ToolMiddleware {
  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    counters.middleware++;
    if (auditLog.length >= LOG_LIMIT) auditLog.length = 0;
    auditLog.push({ tool: call.tool, callId: call.callId, attempt: call.attempt });
    return next();
  }
}

@injectable()
export class AuthCheckMiddleware implements ToolMiddleware {
  static requires(): readonly string[] {
    return [AUTH_KEY];
  }

  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    counters.middleware++;
    const auth = call.context.get<{ allowed: boolean }>(AUTH_KEY);
    if (!auth?.allowed) return { ok: false, error: { code: 'AuthDenied', message: 'not allowed', retryable: false } };
    return next();
  }
}

@injectable()
export class RetryOnceMiddleware implements ToolMiddleware {
  async intercept(call: ToolInvocation, next: NextToolHandler): Promise<ToolResult> {
    counters.middleware++;
    for (let attempt = 1; ; attempt++) {
      const result = await next(attempt === 1 ? undefined : { ...call, attempt });
      if (result.ok || !result.error.retryable || attempt >= 2) return result;
    }
  }
}

// --- Tools and transform

export class AddInput {
  @IsNumber() a!: number;
  @IsNumber() b!: number;
}

export class EchoInput {
  @IsString() text!: string;
}

export class LookupInput {
  @IsString() key!: string;
}

@Plugin({ name: 'bench', version: '1.0.0', description: 'The issue-6 benchmark workload' })
@Middleware(AuditLogMiddleware)
@Middleware(AuthCheckMiddleware)
@Middleware(RetryOnceMiddleware)
export class BenchPlugin {
  @Tool({ name: 'bench.add', description: 'Adds a and b. Use for arithmetic.', input: AddInput })
  add(input: AddInput): number {
    counters.tools++;
    return input.a + input.b;
  }

  @Tool({ name: 'bench.echo', description: 'Returns the text unchanged. Use to repeat text.', input: EchoInput })
  async echo(input: EchoInput): Promise<string> {
    counters.tools++;
    if (hold.enabled && input.text === HELD_ECHO) {
      hold.waiting++;
      await hold.gate;
    }
    return input.text;
  }

  @Tool({ name: 'bench.lookup', description: 'Looks a key up in a table. Use for k0..k4.', input: LookupInput })
  lookup(input: LookupInput): string | undefined {
    counters.tools++;
    return LOOKUP.get(input.key);
  }

  @Transform()
  note(request: InferenceRequest): InferenceRequest {
    counters.transforms++;
    return { ...request, messages: [...request.messages, { role: 'system', content: NOTE }] };
  }
}

/** What one turn must do, as counted by the workload. */
export const PER_TURN = {
  tools: TOOL_ROUNDS,
  middleware: TOOL_ROUNDS * MIDDLEWARE_PER_CALL,
  transforms: ROUNDS_PER_TURN,
  modelCalls: ROUNDS_PER_TURN,
} as const;

/** Throws unless `turns` turns did all the workload's work. */
export function assertWork(turns: number, label: string): void {
  for (const [key, perTurn] of Object.entries(PER_TURN)) {
    const value = perTurn * turns;
    const got = counters[key as keyof typeof counters];
    if (got !== value) {
      throw new Error(
        `${label}: expected ${value} ${key} over ${turns} turns (${value / turns} per turn), counted ${got}: the benchmark skipped work`,
      );
    }
  }
}
