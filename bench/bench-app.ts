import { Trellis, ScriptedModel, type Agent, type PluginClass, type SessionStore, type TurnResult } from '../index.js';
import type { ScriptedReplyFn } from '../testing.js';
import { AUTH, AUTH_KEY, BenchPlugin, FINAL_REPLY, ROUNDS_PER_TURN, scriptFn, TOOL_ROUNDS } from './workload.js';

/** An app with the workload plugin (and any extra plugins) and its agent. */
export interface BenchApp {
  readonly app: Trellis;
  readonly agent: Agent;
  readonly model: ScriptedModel;
  /** One turn in a fresh session: the message in, the reply out; the session is ended after. */
  turn(id: string): Promise<TurnResult>;
}

export interface BenchAppOptions {
  readonly extra?: readonly PluginClass[];
  readonly store?: SessionStore;
  /** The model's reply function; default the workload's script for a fresh session. */
  readonly script?: ScriptedReplyFn;
}

export async function createBenchApp(options: BenchAppOptions = {}): Promise<BenchApp> {
  const app = Trellis.create({ store: options.store });
  await app.install(BenchPlugin);
  for (const plugin of options.extra ?? []) await app.install(plugin);
  const model = new ScriptedModel(options.script ?? scriptFn);
  const agent = app.agent({
    name: 'bench',
    model,
    instructions: 'You run the benchmark script.',
    maxRounds: ROUNDS_PER_TURN + 4,
  });
  return {
    app,
    agent,
    model,
    async turn(id) {
      const session = agent.session(id, { context: { [AUTH_KEY]: AUTH } });
      const result = await session.send('Run the script.');
      // ScriptedModel keeps every request by reference; the bench does not need them.
      model.calls.length = 0;
      await session.end();
      return result;
    },
  };
}

/** Throws unless the turn completed the whole script. */
export function checkResult(result: TurnResult, label: string): void {
  if (
    result.status !== 'completed' ||
    result.reply !== FINAL_REPLY ||
    result.rounds !== ROUNDS_PER_TURN ||
    result.toolCalls.length !== TOOL_ROUNDS ||
    !result.toolCalls.every((c) => c.ok)
  ) {
    throw new Error(
      `${label}: the turn did not run the whole script: ${JSON.stringify({ status: result.status, rounds: result.rounds, calls: result.toolCalls.length, error: result.error, failed: result.toolCalls.find((c) => !c.ok) })}`,
    );
  }
}
