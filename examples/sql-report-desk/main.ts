/**
 * The SQL report desk, end to end: `npm start`.
 *
 * Two turns on one session stored in `.trellis/trellis.db`: a question (a bad query fails,
 * the reflection plugin keeps a lesson, a corrected query answers it), then an export that
 * the approval gate suspends, a human approves, and the tool runs; then a typed turn whose
 * answer is a `TopCustomersReport` instance, for a dashboard. Offline with the
 * scripted model unless OPENAI_API_KEY or ANTHROPIC_API_KEY is set.
 */
import 'reflect-metadata';
import { randomUUID } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { resolve } from 'node:path';
import { modelFromEnv, SqliteStore, type TrellisEvent, type TurnResult } from 'trellis';
import { LESSONS_KEY, type Lesson } from 'trellis/plugins/reflection';
import { createDeskApp, DEFAULT_DESK_LOG, DESK_AGENT } from './desk-app.js';
import { deskScriptedModel } from './desk-model.js';
import { TopCustomersReport } from './report-card.js';

const STORE_PATH = '.trellis/trellis.db';
const QUESTION = 'Who are our top three customers by revenue?';
const EXPORT_REQUEST = 'Please export that list as a CSV file.';
const REPORT_REQUEST = 'Give me the top customers as a report card for the dashboard.';

const say = (line = ''): void => void process.stdout.write(`${line}\n`);

async function main(): Promise<void> {
  const fromEnv = modelFromEnv();
  const model = fromEnv?.model ?? deskScriptedModel();
  say('SQL report desk — a Trellis example');
  say(
    fromEnv
      ? `Model: ${fromEnv.label} — a real model, so the conversation may differ from the scripted one.`
      : 'Model: the scripted model (offline; no API key is set). Set OPENAI_API_KEY or ANTHROPIC_API_KEY to use a real one.',
  );

  const store = SqliteStore.open(STORE_PATH);
  const app = await createDeskApp({ store });
  const session = app.agent({ ...DESK_AGENT, model }).session(`desk-${randomUUID().slice(0, 8)}`);
  session.events$.subscribe(narrate);
  say(
    `Plugins: ${app
      .describe()
      .plugins.map((p) => p.name)
      .join(', ')}; session ${session.id} in ${STORE_PATH}`,
  );

  say();
  say(`Turn 1 — user: ${QUESTION}`);
  report(await session.send(QUESTION));
  const lessons = (session.values[LESSONS_KEY] as Lesson[] | undefined) ?? [];
  for (const lesson of lessons) say(`  lesson kept for the next turn: ${lesson.text}`);

  say();
  say(`Turn 2 — user: ${EXPORT_REQUEST}`);
  let result = await session.send(EXPORT_REQUEST);
  report(result);
  while (result.status === 'suspended') {
    for (const call of result.suspended ?? [])
      say(
        `  approval: approving ${call.tool} (${call.callId}) as the reviewer — from a shell: npx trellis resume ${session.id} --approve ${call.callId}`,
      );
    result = await session.resume({
      decisions: (result.suspended ?? []).map((call) => ({ callId: call.callId, decision: 'approve' as const })),
    });
    report(result);
  }
  showExports(result);

  say();
  say(`Turn 3 — user: ${REPORT_REQUEST} (typed: TopCustomersReport)`);
  const card = await session.send(REPORT_REQUEST, { output: TopCustomersReport });
  say(`  status: ${card.status} — ${count(card.rounds, 'round')}`);
  if (card.output) {
    // `card.output` is a TopCustomersReport: validated, and typed as one.
    say(`  report card: ${card.output.headline}`);
    say(
      `  total revenue: $${card.output.totalRevenue.toFixed(2)} ${card.output.currency} from ${count(card.output.customers.length, 'customer')}`,
    );
  } else if (card.error) {
    say(`  error: ${card.error.code}: ${card.error.message}`);
  }

  say();
  say(`Done. The session is stored: npx trellis sessions show ${session.id}`);
  say(`Tool-call logs: ${DEFAULT_DESK_LOG}`);
  await app.stop();
}

/** Prints tool activity as it happens. */
function narrate(event: TrellisEvent): void {
  if (event.type === 'tool.started') say(`  → ${event.tool} ${oneLine(JSON.stringify(event.args))}`);
  else if (event.type === 'tool.finished')
    say(
      event.ok
        ? `  ← ${event.tool} ok (${Math.round(event.durationMs)} ms)`
        : `  ← ${event.tool} failed: ${event.error?.code}: ${oneLine(event.error?.message ?? '')}`,
    );
  else if (event.type === 'tool.suspended')
    say(`  ⏸ ${event.tool} (${event.callId}) waits for approval: ${oneLine(event.message)}`);
}

function report(result: TurnResult): void {
  say(
    `  status: ${result.status} — ${count(result.rounds, 'round')}, ${count(result.toolCalls.length, 'tool call')}, ${result.usage.totalTokens} tokens`,
  );
  if (result.reply) for (const line of result.reply.split('\n')) say(`  assistant: ${line}`);
  if (result.error) say(`  error: ${result.error.code}: ${result.error.message}`);
}

/** `1 round`, `2 rounds`. */
function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function showExports(result: TurnResult): void {
  for (const call of result.toolCalls) {
    if (call.tool !== 'export.csv' || !call.ok) continue;
    const file = (call.value as { file: string }).file;
    say(`  export written: ${file}`);
    for (const line of readFileSync(resolve(file), 'utf8').trimEnd().split('\n')) say(`    ${line}`);
  }
}

function oneLine(text: string, max = 110): string {
  const flat = text.replace(/\s+/g, ' ');
  return flat.length > max ? `${flat.slice(0, max - 1)}…` : flat;
}

main().catch((error: unknown) => {
  process.stderr.write(`sql-report-desk failed: ${error instanceof Error ? error.message : String(error)}\n`);
  process.exitCode = 1;
});
