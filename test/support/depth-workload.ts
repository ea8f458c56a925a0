import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { appendFileSync } from 'node:fs';
import { join } from 'node:path';
import { IsInt, IsString } from 'class-validator';
import {
  inject,
  Plugin,
  ScriptedModel,
  Tool,
  Trellis,
  type ModelRequest,
  type ScriptedReply,
  type SessionStore,
  type ToolContext,
} from '../../index.js';
import { PLUGIN_CONFIG } from '../../plugin.js';

/**
 * The workload of the durable-steps test at depth (issue 25, item 5): one turn of the `desk`
 * agent that
 *   1. asks the `writer` sub-agent (agent as tool) for two lines, which it writes in two tool
 *      rounds of its own turn (in its child session) before it answers;
 *   2. hands the conversation over to `closer`, which writes a third line in a tool round of
 *      the same turn, then gives the turn's answer.
 * Every model gives each tool call a fresh random id, as real providers do, and appends each
 * completed call to a model ledger (`<agent>:<round>`); the tools append each run to a tool
 * ledger with their idempotency key. The ledgers are files in the app's own folder, so two
 * apps (one per store) run side by side in one process and their counts add up across processes.
 */

/** Where an app's ledgers live: `model.txt` and `tools.txt` in `dir`. */
export class DepthLedgerConfig {
  @IsString() dir!: string;
}

export class LineInput {
  @IsInt() n!: number;
}

/** One tool run, as the tool ledger keeps it. */
export interface DepthLine {
  readonly key: string;
  readonly n: number;
  readonly tool: string;
  readonly session: string;
}

/** The lines each agent writes, by the round of the turn it writes them in. */
export const WRITER_ROUNDS: readonly (readonly number[])[] = [[1], [2]];
export const CLOSER_ROUND = 2;
export const CLOSER_LINE = 3;
export const WRITER_REPLY = 'Lines 1 and 2 are written.';
export const FINAL_REPLY = 'closer: all three lines are written.';
/** Model calls of an uninterrupted turn, by agent and round: each exactly once. */
export const MODEL_CALLS = ['desk:0', 'desk:1', 'writer:0', 'writer:1', 'writer:2', 'closer:2', 'closer:3'] as const;

/** Called in a tool run after its ledger line is written, with the app's ledger folder (the mid-tool kill point). */
let afterWrite: (n: number, dir: string) => void | Promise<void> = () => undefined;

export function onLineWritten(hook: (n: number, dir: string) => void | Promise<void>): void {
  afterWrite = hook;
}

@Plugin({
  name: 'lines',
  version: '1.0.0',
  description: 'Writes numbered lines to a ledger',
  config: DepthLedgerConfig,
})
export class DepthLedgerPlugin {
  constructor(@inject(PLUGIN_CONFIG) private readonly config: DepthLedgerConfig) {}

  @Tool({
    name: 'lines.write',
    description: 'Writes line n. Safe to repeat with the same idempotency key.',
    input: LineInput,
    onCrash: 'retry',
  })
  async write(input: LineInput, ctx: ToolContext) {
    return this.#run('lines.write', input.n, ctx);
  }

  @Tool({
    name: 'lines.pay',
    description: 'Pays line n. Not safe to repeat: a human decides after a crash.',
    input: LineInput,
  })
  async pay(input: LineInput, ctx: ToolContext) {
    return this.#run('lines.pay', input.n, ctx);
  }

  async #run(tool: string, n: number, ctx: ToolContext): Promise<string> {
    const line: DepthLine = { key: ctx.idempotencyKey, n, tool, session: ctx.sessionId };
    appendFileSync(join(this.config.dir, 'tools.txt'), `${JSON.stringify(line)}\n`);
    await afterWrite(n, this.config.dir);
    return `wrote ${n}`;
  }
}

/** The round a request is for: the assistant messages after the last user message. */
function roundOf(request: ModelRequest): number {
  const messages = request.messages;
  let round = 0;
  for (let index = messages.length - 1; index >= 0 && messages[index]!.role !== 'user'; index--)
    if (messages[index]!.role === 'assistant') round++;
  return round;
}

const call = (name: string, args: object) => ({ id: `call_${randomUUID()}`, name, args });

/** A model that counts its completed calls in `dir`'s model ledger and answers with `reply(round)`. */
function counted(dir: string, agent: string, reply: (round: number) => ScriptedReply): ScriptedModel {
  return new ScriptedModel(
    (request) => {
      const round = roundOf(request);
      const answer = reply(round);
      appendFileSync(join(dir, 'model.txt'), `${agent}:${round}\n`);
      return answer;
    },
    { name: `${agent}-model` },
  );
}

/**
 * The app of one store: the three agents, the lines plugin writing to `dir`. `writerTool` is
 * the writer's tool: `lines.write` (run again after a crash) or `lines.pay` (in doubt: asked).
 */
export async function depthApp(
  store: SessionStore,
  dir: string,
  writerTool: 'lines.write' | 'lines.pay' = 'lines.write',
) {
  const app = Trellis.create({ store, leaseTtlMs: 1_000 });
  await app.install(DepthLedgerPlugin, { config: { dir } });
  app.agent({
    name: 'writer',
    model: counted(dir, 'writer', (round) =>
      WRITER_ROUNDS[round] ? { toolCalls: WRITER_ROUNDS[round].map((n) => call(writerTool, { n })) } : WRITER_REPLY,
    ),
    instructions: 'Write the lines.',
    plugins: ['lines'],
  });
  app.agent({
    name: 'closer',
    model: counted(dir, 'closer', (round) =>
      round === CLOSER_ROUND ? { toolCalls: [call('lines.write', { n: CLOSER_LINE })] } : FINAL_REPLY,
    ),
    instructions: 'Write the last line and close.',
    plugins: ['lines'],
  });
  const desk = app.agent({
    name: 'desk',
    model: counted(dir, 'desk', (round) =>
      round === 0
        ? { toolCalls: [call('ask_writer', { input: 'write lines 1 and 2' })] }
        : { toolCalls: [call('handoff_to_closer', { input: 'write line 3' })] },
    ),
    instructions: 'Delegate, then hand over.',
    plugins: [],
    agents: [{ agent: 'writer', name: 'ask_writer', description: 'Asks the writer to write lines.' }],
    handoffs: [{ agent: 'closer' }],
  });
  return { app, session: desk.session('s1') };
}

/** The message and key of the workload's turn. */
export const MESSAGE = 'write three lines';
export const TURN_KEY = 'turn-1';
