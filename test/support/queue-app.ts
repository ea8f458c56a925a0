import 'reflect-metadata';
import { IsString } from 'class-validator';
import { Hook, Plugin, ScriptedModel, suspend, Tool, Trellis, type ModelRequest, type SessionStore, type ToolCallInfo } from '../../index.js';

class RecordInput {
  @IsString() line!: string;
}

/** Where the tools of the queue app write what ran: one line per tool run. */
export type ToolLedger = (line: string) => void | Promise<void>;

/**
 * The app queue tests run in workers: a `ledger.record` tool that writes every run to a
 * ledger, and a gate that parks any line starting with `approve:` for a human.
 * The scripted model calls the tool once per turn with the user's message as the line,
 * after `delayMs` (a network model's latency), then answers `done: <line>`.
 */
export function createQueueApp(store: SessionStore, ledger: ToolLedger, delayMs = 0) {
  @Plugin({ name: 'ledger', version: '1.0.0' })
  class LedgerPlugin {
    @Tool({ name: 'ledger.record', description: 'Records one line in the ledger.', input: RecordInput })
    async record(input: RecordInput): Promise<string> {
      await ledger(input.line);
      return `recorded ${input.line}`;
    }

    @Hook('tool.gate')
    approval(call: ToolCallInfo) {
      const line = String((call.args as { line?: unknown }).line ?? '');
      if (line.startsWith('approve:')) return suspend({ message: `Record ${line}?`, allowedDecisions: ['approve', 'reject'] });
      return undefined;
    }
  }

  const reply = async (request: ModelRequest) => {
    if (delayMs > 0) await new Promise((resolve) => setTimeout(resolve, delayMs));
    const last = request.messages.at(-1)!;
    if (last.role === 'tool') return `done: ${last.content}`;
    return { toolCalls: [{ id: `call-${request.messages.length}`, name: 'ledger.record', args: { line: last.content } }] };
  };

  const app = Trellis.create({ store });
  const model = new ScriptedModel(reply);
  return {
    app,
    install: () => app.install(LedgerPlugin),
    agent: () => app.agent({ name: 'ledger-keeper', model, instructions: 'Record what you are told.' }),
  };
}
