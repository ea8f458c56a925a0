/**
 * One process of the durable-approval test:
 *   node --loader ts-node/esm approval-process.ts <db> <ledger file> <session> suspend
 *   node --loader ts-node/esm approval-process.ts <db> <ledger file> <session> resume '<decisions JSON>'
 *
 * `suspend` sends a message; the model asks for two `ledger.append` calls, the gate parks
 * both, and the process exits. `resume` opens the same SQLite file in a fresh process and
 * resumes with the decisions. Each prints one JSON line: the turn result, or
 * `{ error: { code, message } }` with exit code 3.
 */
import 'reflect-metadata';
import { appendFileSync } from 'node:fs';
import { IsString } from 'class-validator';
import {
  Hook,
  Plugin,
  ScriptedModel,
  SqliteStore,
  suspend,
  Tool,
  Trellis,
  TrellisError,
  type ModelRequest,
  type ToolCallInfo,
} from '../../../../index.js';

const [dbPath, ledgerPath, sessionId, mode, decisionsJson] = process.argv.slice(2);
if (!dbPath || !ledgerPath || !sessionId || (mode !== 'suspend' && mode !== 'resume')) {
  throw new Error('usage: approval-process.ts <db> <ledger> <session> suspend|resume [decisions]');
}

class AppendInput {
  @IsString() line!: string;
}

@Plugin({ name: 'ledger', version: '1.0.0' })
class LedgerPlugin {
  @Tool({ name: 'ledger.append', description: 'Appends one line to the ledger file.', input: AppendInput })
  append(input: AppendInput): string {
    appendFileSync(ledgerPath!, `${input.line}\n`);
    return `appended ${input.line}`;
  }

  @Hook('tool.gate')
  approval(call: ToolCallInfo) {
    return suspend({ message: `Append ${JSON.stringify(call.args)}?`, allowedDecisions: ['approve', 'reject'] });
  }
}

/** First call: two appends; after the tool results: a final answer. */
function reply(request: ModelRequest) {
  if (request.messages.at(-1)?.role === 'tool') return 'The ledger is updated.';
  return {
    toolCalls: [
      { id: 'call_approved', name: 'ledger.append', args: { line: 'approved-line' } },
      { id: 'call_rejected', name: 'ledger.append', args: { line: 'rejected-line' } },
    ],
  };
}

const app = Trellis.create({ store: SqliteStore.open(dbPath) });
await app.install(LedgerPlugin);
const session = app
  .agent({ name: 'ledger-keeper', model: new ScriptedModel(reply), instructions: 'Keep the ledger.' })
  .session(sessionId);
try {
  const result =
    mode === 'suspend'
      ? await session.send('Record both lines.')
      : await session.resume({ decisions: JSON.parse(decisionsJson ?? '[]') });
  process.stdout.write(
    `${JSON.stringify({ status: result.status, reply: result.reply, suspended: result.suspended?.map((p) => p.callId), toolCalls: result.toolCalls })}\n`,
  );
} catch (error) {
  const code = TrellisError.is(error) ? error.code : 'Unexpected';
  process.stdout.write(
    `${JSON.stringify({ error: { code, message: error instanceof Error ? error.message : String(error) } })}\n`,
  );
  process.exitCode = 3;
} finally {
  await app.stop();
}
