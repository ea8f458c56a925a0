/**
 * The delegation desk: `npm run example:delegation`.
 *
 * One session on a SQLite file: triage hands a refund question to the refunds agent, which
 * asks the payments agent (used as a tool) to pay; the payment waits for a human two
 * agents down, surfaces at the top with its path, is approved, runs once; then the refunds
 * agent hands the conversation back. Offline, with scripted models.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { SqliteStore } from 'trellis';
import { createDelegationDesk } from './desk.js';
import { PaymentsPlugin } from './payments.plugin.js';

const say = (line = ''): void => void process.stdout.write(`${line}\n`);

const store = SqliteStore.open(process.argv[2] ?? '.trellis/delegation-desk.db');
const { app, triage } = await createDelegationDesk(store);
const session = triage.session(randomUUID());
try {
  say('> I want a refund for order 42');
  const asked = await session.send('I want a refund for order 42');
  say(`  active agent: ${session.activeAgent}; turn ${asked.status}`);
  for (const call of asked.suspended ?? [])
    say(
      `  waiting: ${call.callId} (${call.tool}) via ${call.path?.join(' → ') ?? 'this agent'}: ${call.ticket.message}`,
    );

  const decided = await session.resume({
    decisions: (asked.suspended ?? []).map((call) => ({ callId: call.callId, decision: 'approve' as const })),
  });
  say(`< ${decided.reply}`);
  say(
    `  tokens: ${decided.usage.totalTokens} (${Object.entries(decided.usage.byAgent ?? {})
      .map(([agent, u]) => `${agent} ${u.totalTokens}`)
      .join(', ')})`,
  );

  say('> Thanks, that is all');
  const back = await session.send('Thanks, that is all');
  say(`< ${back.reply}`);
  say(`  active agent: ${session.activeAgent}; refunds paid: ${PaymentsPlugin.ledger.paid.length}`);
} finally {
  await app.stop();
}
