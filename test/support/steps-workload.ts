import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { appendFileSync, existsSync, readFileSync } from 'node:fs';
import { IsInt } from 'class-validator';
import { Plugin, Tool, type ModelRequest, type ScriptedReply, type ToolContext } from '../../index.js';

/**
 * The workload of the durable-steps tests (issue 25): a turn of three tool rounds — one call,
 * then two calls at once, then one — and an answer. The model gives every call a fresh random
 * id, as real providers do, and counts the responses it completed; the tools append every run
 * to a ledger with their idempotency key. Both counts go to files, so they add up across
 * processes.
 */
export interface Ledgers {
  /** One line per completed model call: `<round>`. */
  readonly model: string;
  /** One line per tool run: JSON `{ key, n, tool, callId }`. */
  readonly tools: string;
}

export class WriteInput {
  @IsInt() n!: number;
}

/** What each round asks for, by round (0-based): the `n` of each call. */
export const ROUNDS: readonly (readonly number[])[] = [[1], [2, 3], [4]];
export const FINAL_REPLY = 'All four writes are done.';

let ledgers: Ledgers | undefined;
/** Called in a tool run after its ledger line is written (the mid-tool kill point). */
let afterWrite: (n: number) => void | Promise<void> = () => undefined;

export function useLedgers(files: Ledgers, onWrite?: (n: number) => void | Promise<void>): void {
  ledgers = files;
  afterWrite = onWrite ?? (() => undefined);
}

@Plugin({ name: 'ledger', version: '1.0.0', description: 'Writes lines to a ledger' })
export class LedgerPlugin {
  @Tool({
    name: 'ledger.write',
    description: 'Writes line n to the ledger. Safe to repeat with the same idempotency key.',
    input: WriteInput,
    onCrash: 'retry',
  })
  async write(input: WriteInput, ctx: ToolContext) {
    appendFileSync(
      ledgers!.tools,
      `${JSON.stringify({ key: ctx.idempotencyKey, n: input.n, tool: 'ledger.write', callId: ctx.callId })}\n`,
    );
    await afterWrite(input.n);
    return `wrote ${input.n}`;
  }

  @Tool({
    name: 'ledger.pay',
    description: 'Pays n. Not safe to repeat: a human decides after a crash.',
    input: WriteInput,
  })
  async pay(input: WriteInput, ctx: ToolContext) {
    appendFileSync(
      ledgers!.tools,
      `${JSON.stringify({ key: ctx.idempotencyKey, n: input.n, tool: 'ledger.pay', callId: ctx.callId })}\n`,
    );
    await afterWrite(input.n);
    return `paid ${input.n}`;
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

/** The model: fresh random call ids on every call; each completed response counted in the model ledger. */
export function stepsScript(tool: 'ledger.write' | 'ledger.pay' = 'ledger.write') {
  return (request: ModelRequest): ScriptedReply => {
    const round = roundOf(request);
    appendFileSync(ledgers!.model, `${round}\n`);
    const calls = ROUNDS[round];
    if (calls === undefined) return FINAL_REPLY;
    return { toolCalls: calls.map((n) => ({ id: `call_${randomUUID()}`, name: tool, args: { n } })) };
  };
}

/** Lines of a ledger file, parsed. */
export function readLedger<T = unknown>(
  file: string,
  parse: (line: string) => T = (line) => JSON.parse(line) as T,
): T[] {
  if (!existsSync(file)) return [];
  return readFileSync(file, 'utf8').split('\n').filter(Boolean).map(parse);
}
