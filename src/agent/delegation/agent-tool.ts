import { DelegatedOutcome } from '../../contract/delegation.js';
import { errorResult, type ToolResult } from '../../contract/tool-result.js';
import type { MemberContext } from '../../engine/context/member-context.js';
import { NEVER_ABORTED } from '../../engine/context/never-signal.js';
import { TrellisError } from '../../errors/trellis-error.js';
import type { RegisteredTool } from '../../contract/plugin-member.js';
import type { TurnEnv } from '../../engine/tools/turn-env.js';
import { dtoJsonSchema } from '../../engine/validation/dto-json-schema.js';
import { toolInputValidator } from '../../engine/validation/tool-input.js';
import { formatFieldErrors } from '../../engine/validation/validate-dto.js';
import { parseOutput } from '../../engine/validation/parse-output.js';
import { plainOutput } from '../turn/turn-output.js';
import type { Decision, TurnResult } from '../turn/turn-result.js';
import { AgentInput, RemoteAgentInput, type AgentToolSpec, type RemoteAgent } from './agent-tool-spec.js';
import type { DelegateSession, DelegatedRun } from '../session-host.js';
import { childFrame, depthLimitOf, pathOf, type DelegationSite } from './delegation-site.js';
import { asCallerSees, childSessionId } from './delegated-decisions.js';
import { takeResume } from './resume-stash.js';
import { asDelegatedUsage } from './usage-rollup.js';
import { LEASE_TTL_MS } from '../durability/session-lease.js';

const NO_KEYS: readonly string[] = [];
/** A child session's lease left by a process that died is free after its TTL: wait that out, and 5 s more. */
export function childLeaseWaitMs(host: { readonly leaseTtlMs?: number }): number {
  return (host.leaseTtlMs ?? LEASE_TTL_MS) + 5_000;
}

/**
 * The tool that runs `spec.agent` for the model: one full turn of that agent in a child
 * session named after this call (so a resume, in any process, finds it again). Refused
 * before anything runs when it would loop (A → B → A) or nest too deep.
 */
export function agentTool(current: () => TurnEnv, site: DelegationSite, spec: AgentToolSpec): RegisteredTool {
  const input = spec.input ?? (spec.remote ? RemoteAgentInput : AgentInput);
  const { schema, validateInput } = shapeOf(input, spec.name);
  const self = site.spec.name;
  return {
    plugin: 'trellis',
    method: `agent:${spec.agent}`,
    requires: [],
    declared: new Set(),
    name: spec.name,
    description: spec.description,
    input,
    validateInput,
    schema,
    tags: spec.remote ? ['agent', ...(spec.remote.tags ?? [])] : ['agent'],
    // A sub-agent's turn journals its own steps and a handoff only marks the turn: run again, either repeats nothing.
    // A remote agent's does not, unless it says it deduplicates.
    onCrash: spec.remote ? (spec.remote.onCrash ?? 'ask') : 'retry',
    chain: [],
    chainNames: [],
    delegation: (call) => ({
      kind: 'tool',
      from: self,
      to: spec.agent,
      callId: call.callId,
      input: call.args,
      path: pathOf(current(), self),
    }),
    fn: spec.remote
      ? (args: unknown, ctx: never) => askRemote(current(), spec, spec.remote!, args as object, ctx as MemberContext)
      : (args: unknown, ctx: never) => runSubAgent(current(), site, spec, args as object, ctx as MemberContext),
  };
}

/** A remote agent's call: its reply is the result; any other state goes back to the model as `{ state, taskId, text }`. */
async function askRemote(
  env: TurnEnv,
  spec: AgentToolSpec,
  remote: RemoteAgent,
  args: object,
  ctx: MemberContext,
): Promise<unknown> {
  const taskId = spec.input ? undefined : (args as RemoteAgentInput).taskId;
  const reply = await remote.ask(spec.input ? messageFor(spec, args) : (args as RemoteAgentInput).input, {
    sessionId: env.sessionId,
    callId: ctx.callId,
    idempotencyKey: ctx.idempotencyKey,
    ...(taskId !== undefined ? { taskId } : {}),
    ...(ctx.signal === NEVER_ABORTED ? {} : { signal: ctx.signal }),
  });
  if (reply.state !== 'completed')
    return {
      state: reply.state,
      text: reply.text,
      ...(reply.taskId ? { taskId: reply.taskId } : {}),
      ...(reply.data?.length ? { data: reply.data } : {}),
    };
  if (!spec.output) return reply.text;
  const result = structured(spec, reply.text);
  if (!result.ok) throw new TrellisError('ToolOutput', result.error.message);
  return result.value;
}

async function runSubAgent(
  env: TurnEnv,
  site: DelegationSite,
  spec: AgentToolSpec,
  args: object,
  ctx: MemberContext,
): Promise<DelegatedOutcome> {
  const self = site.spec.name;
  const path = pathOf(env, self);
  if (path.includes(spec.agent)) {
    throw new TrellisError(
      'DelegationLoop',
      `${[...path, spec.agent].join(' → ')}: '${spec.agent}' is already running this conversation further up; an agent cannot call itself through its sub-agents`,
      {
        hint: `Answer with what you have, or use another tool; remove '${spec.agent}' from the agents of '${self}' if it should never be called from here`,
      },
    );
  }
  const limit = depthLimitOf(env, site);
  if (path.length > limit.max) {
    throw new TrellisError(
      'DelegationDepth',
      `${[...path, spec.agent].join(' → ')} would nest ${path.length} sub-agents deep; '${limit.agent}' allows ${limit.max}`,
      {
        hint: `Answer with what you have; or raise maxDelegationDepth on '${limit.agent}' if the depth is intended`,
      },
    );
  }
  const target = site.host.agent?.(spec.agent);
  if (!target) {
    throw new TrellisError(
      'UnknownAgent',
      `Agent '${self}' offers '${spec.agent}' as the tool ${spec.name}, but this app has no agent named '${spec.agent}'`,
      {
        hint: `Create it with app.agent({ name: '${spec.agent}', … }) in every process that runs '${self}'`,
      },
    );
  }
  const childSessionId = childSessionIdOf(env, ctx.callId, spec.agent);
  const child = target.session(childSessionId, { context: contextFor(env, spec.context ?? NO_KEYS) });
  // With `output`, the sub-agent's turn is typed: its answer is checked (with repair rounds) where it is written.
  const run: DelegatedRun = {
    signal: ctx.signal === NEVER_ABORTED ? undefined : ctx.signal,
    delegation: childFrame(env, site, ctx.callId, spec.agent),
    waitForLease: childLeaseWaitMs(site.host),
    key: ctx.idempotencyKey,
    ...(spec.output !== undefined && { output: spec.output }),
  };
  const decisions = takeResume(env, ctx.callId);
  const result = decisions ? await resumeChild(child, decisions, run) : await child.send(messageFor(spec, args), run);
  const reported = env.hooks.run(
    'agent.delegated',
    { kind: 'tool', from: self, to: spec.agent, callId: ctx.callId, childSessionId, status: result.status, path },
    env.site,
  );
  if (reported instanceof Promise) await reported;
  if (result.status === 'suspended') {
    const pending = asCallerSees(result.suspended ?? [], ctx.callId, self, spec.agent);
    return DelegatedOutcome.suspended({ agent: spec.agent, childSessionId, pending });
  }
  const usage = asDelegatedUsage(result.usage, spec.agent);
  if (result.status !== 'completed' || result.reply === undefined) {
    const why = result.error ? `: ${result.error.message}` : '';
    return DelegatedOutcome.finished(
      errorResult('DelegationFailed', `${spec.agent} ended its turn '${result.status}' without a reply${why}`),
      usage,
    );
  }
  if (!spec.output) return DelegatedOutcome.finished({ ok: true, value: result.reply }, usage);
  return DelegatedOutcome.finished(
    result.output !== undefined ? { ok: true, value: plainOutput(result.output) } : structured(spec, result.reply),
    usage,
  );
}

/**
 * Continues the child session's suspended turn. If it is not suspended any more, an
 * earlier resume finished it and this process stopped before the caller saved the result:
 * its reply is the last one in its transcript, and nothing runs again.
 */
async function resumeChild(
  child: DelegateSession,
  decisions: readonly Decision[],
  run: DelegatedRun,
): Promise<TurnResult> {
  if ((await child.pending()).length > 0) return child.resume({ ...run, decisions });
  const last = [...child.transcript].reverse().find((m) => m.role === 'assistant' && !m.toolCalls);
  return {
    status: 'completed',
    reply: last?.content ?? '',
    rounds: 0,
    toolCalls: [],
    usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0, byModel: {} },
  };
}

/** One child session per call: stable across processes, unique per session, turn and call. */
export function childSessionIdOf(env: TurnEnv, callId: string, agent: string): string {
  return childSessionId(env.sessionId, env.turnIndex, callId, agent);
}

/** Only what the agent tool names: the nearest level's value of each key (turn, then session). */
function contextFor(env: TurnEnv, keys: readonly string[]): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  const turn = env.site.scope.turn?.values;
  const session = env.site.scope.state.session.values;
  for (const key of keys) {
    const value = turn?.[key] !== undefined ? turn[key] : session[key];
    if (value !== undefined) out[key] = value;
  }
  return out;
}

function messageFor(spec: AgentToolSpec, args: object): string {
  if (spec.message) return spec.message(args);
  if (!spec.input) return (args as AgentInput).input;
  return JSON.stringify(args);
}

/** A structured result from a reply's text (a remote agent's, or one read back from a transcript), checked against `output`. */
function structured(spec: AgentToolSpec, reply: string): ToolResult {
  const checked = parseOutput(spec.output!, reply, dtoJsonSchema(spec.output!));
  if (!checked.ok)
    return errorResult(
      'ToolOutput',
      `${spec.agent}'s reply does not match ${spec.output!.name}:\n${formatFieldErrors(checked.errors)}`,
    );
  return { ok: true, value: plainOutput(checked.value) };
}

const shapes = new WeakMap<
  new () => object,
  { schema: RegisteredTool['schema']; validateInput: RegisteredTool['validateInput'] }
>();

/** The schema the model sees and the validator, built once per DTO. */
function shapeOf(input: new () => object, name: string) {
  let shape = shapes.get(input);
  if (!shape) {
    shape = {
      schema: dtoJsonSchema(input),
      validateInput: toolInputValidator(input, undefined, `agent tool '${name}'`),
    };
    shapes.set(input, shape);
  }
  return shape;
}
