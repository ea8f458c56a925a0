/**
 * One process of the approvals-at-depth test, on one SQLite file:
 *   node --loader ts-node/esm delegation-process.ts <db> <ledger file> <session> suspend
 *   node --loader ts-node/esm delegation-process.ts <db> <ledger file> <session> resume '<decisions JSON>'
 *   node --loader ts-node/esm delegation-process.ts <db> <ledger file> <session> resume-crash '<decisions JSON>'
 *   node --loader ts-node/esm delegation-process.ts <db> <ledger file> <session> pending
 *
 * Three agents: `top` uses `mid` as a tool, `mid` uses `leaf`, and `leaf` asks for two
 * `ledger.append` calls that a gate parks. `resume-crash` dies (exit 9) inside the ledger
 * tool right after it wrote its line, before anything is saved (its leases stay until their
 * TTL, so a resume waits for them). Each run prints one JSON
 * line: the turn result, or `{ error: { code, message } }` with exit code 3.
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
  type PendingApproval,
  type ScriptedReply,
  type ToolCallInfo,
} from '../../../../index.js';

const [dbPath, ledgerPath, sessionId, mode, decisionsJson] = process.argv.slice(2);
if (
  !dbPath ||
  !ledgerPath ||
  !sessionId ||
  (mode !== 'suspend' && mode !== 'resume' && mode !== 'resume-crash' && mode !== 'pending')
) {
  throw new Error(
    'usage: delegation-process.ts <db> <ledger> <session> suspend|resume|resume-crash|pending [decisions]',
  );
}

class AppendInput {
  @IsString() line!: string;
}

@Plugin({ name: 'ledger', version: '1.0.0' })
class LedgerPlugin {
  @Tool({ name: 'ledger.append', description: 'Appends one line to the ledger file.', input: AppendInput })
  append(input: AppendInput): string {
    appendFileSync(ledgerPath!, `${input.line}\n`);
    if (mode === 'resume-crash') process.exit(9);
    return `appended ${input.line}`;
  }

  @Hook('tool.gate')
  approval(call: ToolCallInfo) {
    if (call.tool !== 'ledger.append') return undefined;
    return suspend({ message: `Append ${JSON.stringify(call.args)}?`, allowedDecisions: ['approve', 'reject'] });
  }
}

const tools = (request: ModelRequest) => request.messages.filter((m) => m.role === 'tool');

function leaf(request: ModelRequest): ScriptedReply {
  if (tools(request).length > 0)
    return `leaf: ${tools(request)
      .map((t) => t.content)
      .join('; ')}`;
  return {
    toolCalls: [
      { id: 'l_yes', name: 'ledger.append', args: { line: 'approved-line' } },
      { id: 'l_no', name: 'ledger.append', args: { line: 'rejected-line' } },
    ],
  };
}

const relay =
  (id: string, tool: string) =>
  (request: ModelRequest): ScriptedReply =>
    tools(request).length > 0
      ? `${id}: ${tools(request)[0]!.content}`
      : { toolCalls: [{ id, name: tool, args: { input: 'Record both lines.' } }] };

const app = Trellis.create({ store: SqliteStore.open(dbPath) });
await app.install(LedgerPlugin);
app.agent({ name: 'leaf', model: new ScriptedModel(leaf), instructions: 'Keep the ledger.', plugins: ['ledger'] });
app.agent({
  name: 'mid',
  model: new ScriptedModel(relay('m1', 'ask_leaf')),
  instructions: 'Relay.',
  plugins: [],
  agents: [{ agent: 'leaf', name: 'ask_leaf', description: 'Ask the ledger keeper.' }],
});
const top = app.agent({
  name: 'top',
  model: new ScriptedModel(relay('t1', 'ask_mid')),
  instructions: 'Relay.',
  plugins: [],
  agents: [{ agent: 'mid', name: 'ask_mid', description: 'Ask the middle agent.' }],
});
const session = top.session(sessionId);
/** The waiting calls as the test compares them. */
const waiting = (pending: readonly PendingApproval[] | undefined) =>
  pending?.map((p) => ({ callId: p.callId, path: p.path, allowed: p.ticket.allowedDecisions }));

try {
  if (mode === 'pending') {
    process.stdout.write(`${JSON.stringify({ status: 'pending', suspended: waiting(await session.pending()) })}\n`);
  } else {
    const result =
      mode === 'suspend'
        ? await session.send('Record both lines.')
        : await session.resume({ decisions: JSON.parse(decisionsJson ?? '[]'), waitForLease: 40_000 });
    process.stdout.write(
      `${JSON.stringify({ status: result.status, reply: result.reply, suspended: waiting(result.suspended), usage: result.usage })}\n`,
    );
  }
} catch (error) {
  const code = TrellisError.is(error) ? error.code : 'Unexpected';
  process.stdout.write(
    `${JSON.stringify({ error: { code, message: error instanceof Error ? error.message : String(error) } })}\n`,
  );
  process.exitCode = 3;
} finally {
  await app.stop();
}
