import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { IsString } from 'class-validator';
import {
  Hook,
  Plugin,
  ScriptedModel,
  suspend,
  Tool,
  Trellis,
  type ModelRequest,
  type SessionStore,
  type ToolCallInfo,
  type ToolContext,
} from '../../index.js';

class RecordInput {
  @IsString() line!: string;
}

/** Where the tools of the queue app write what ran: one line per tool run, with the run's idempotency key. */
export type ToolLedger = (line: string, key: string) => void | Promise<void>;

/** More of the queue app: the kernel's lease TTL, and a hook on every model call the script answers. */
export interface QueueAppOptions {
  readonly leaseTtlMs?: number;
  /** Called for each model call with what it is for: the turn's user message and the round (`0` the tool call, `1` the answer). */
  readonly onModelCall?: (call: string) => void | Promise<void>;
}

/**
 * The app queue tests run in workers: a `ledger.record` tool that writes every run to a
 * ledger (retried with its idempotency key after a crash), a `ledger.approve` tool for lines
 * starting with `approve:` (which a gate parks for a human; after a crash mid-run, a human
 * decides again), and a scripted model that calls the tool once per turn with the user's
 * message as the line — with a fresh random call id every time, as real providers do — after
 * `delayMs` (a network model's latency), then answers `done: <line>`. A `wait:` line also calls
 * `ledger.wait`, which waits until its signal aborts (a turn to cancel).
 */
export function createQueueApp(store: SessionStore, ledger: ToolLedger, delayMs = 0, options: QueueAppOptions = {}) {
  @Plugin({ name: 'ledger', version: '1.0.0' })
  class LedgerPlugin {
    @Tool({
      name: 'ledger.record',
      description: 'Records one line in the ledger.',
      input: RecordInput,
      onCrash: 'retry',
    })
    async record(input: RecordInput, ctx: ToolContext): Promise<string> {
      await ledger(input.line, ctx.idempotencyKey);
      return `recorded ${input.line}`;
    }

    @Tool({ name: 'ledger.approve', description: 'Records one line that needs approval.', input: RecordInput })
    async approve(input: RecordInput, ctx: ToolContext): Promise<string> {
      await ledger(input.line, ctx.idempotencyKey);
      return `recorded ${input.line}`;
    }

    /** For lines starting `wait:`: writes `start:<line>`, then waits for its signal to abort (writing `aborted:<line>`), at most 20 s. */
    @Tool({ name: 'ledger.wait', description: 'Waits on a line until stopped.', input: RecordInput })
    async wait(input: RecordInput, ctx: ToolContext): Promise<string> {
      await ledger(`start:${input.line}`, ctx.idempotencyKey);
      const aborted = await new Promise<boolean>((resolve) => {
        const timer = setTimeout(() => resolve(false), 20_000);
        ctx.signal.addEventListener(
          'abort',
          () => {
            clearTimeout(timer);
            resolve(true);
          },
          { once: true },
        );
      });
      if (aborted) await ledger(`aborted:${input.line}`, ctx.idempotencyKey);
      return aborted ? 'stopped' : `waited ${input.line}`;
    }

    @Hook('tool.gate')
    approval(call: ToolCallInfo) {
      const line = String((call.args as { line?: unknown }).line ?? '');
      if (line.startsWith('approve:'))
        return suspend({ message: `Record ${line}?`, allowedDecisions: ['approve', 'reject'] });
      return undefined;
    }
  }

  const reply = async (request: ModelRequest) => {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const last = request.messages.at(-1)!;
    const user = [...request.messages].reverse().find((m) => m.role === 'user')?.content ?? '';
    await options.onModelCall?.(`${user}:${last.role === 'tool' ? 1 : 0}`);
    if (last.role === 'tool') return `done: ${last.content}`;
    // A `wait:` line: one call that finishes (a completed step) and one that waits until stopped.
    if (last.content.startsWith('wait:'))
      return {
        toolCalls: [
          { id: `call_${randomUUID()}`, name: 'ledger.record', args: { line: last.content } },
          { id: `call_${randomUUID()}`, name: 'ledger.wait', args: { line: last.content } },
        ],
      };
    const tool = last.content.startsWith('approve:') ? 'ledger.approve' : 'ledger.record';
    return { toolCalls: [{ id: `call_${randomUUID()}`, name: tool, args: { line: last.content } }] };
  };

  const app = Trellis.create({ store, ...(options.leaseTtlMs !== undefined && { leaseTtlMs: options.leaseTtlMs }) });
  const model = new ScriptedModel(reply);
  return {
    app,
    install: () => app.install(LedgerPlugin),
    agent: () => app.agent({ name: 'ledger-keeper', model, instructions: 'Record what you are told.' }),
  };
}
