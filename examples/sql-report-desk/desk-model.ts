import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { ScriptedModel, type ChatMessage, type ModelRequest, type ScriptedReply } from 'trellis';
import { LESSONS_HEADING } from './desk-app.js';

/** The first try: `orders` has no `total` column, so it fails and teaches a lesson. */
export const BAD_QUERY =
  'SELECT c.name, SUM(o.total) AS spent FROM customers c JOIN orders o ON o.customer_id = c.id GROUP BY c.id ORDER BY spent DESC LIMIT 3';

/** The corrected query: revenue from paid orders, in currency units. */
export const GOOD_QUERY = [
  'SELECT c.name, c.country, ROUND(SUM(p.price_cents * i.quantity) / 100.0, 2) AS spent',
  'FROM customers c',
  'JOIN orders o ON o.customer_id = c.id',
  'JOIN order_items i ON i.order_id = o.id',
  'JOIN products p ON p.id = i.product_id',
  "WHERE o.status = 'paid'",
  'GROUP BY c.id ORDER BY spent DESC LIMIT 3',
].join(' ');

/** The file the scripted model asks `export.csv` to write, when no file of that name exists yet. */
export const EXPORT_FILENAME = 'top-customers.csv';

/** Options of {@link deskScriptedModel}. */
export interface DeskModelOptions {
  /** The folder `export.csv` writes to, where the model looks for a free file name. Default `.trellis/exports`. */
  readonly exportDir?: string;
}

/**
 * The desk's offline model: a `ScriptedModel` whose replies follow the conversation, so
 * the same script serves `npm start`, `trellis run` and `trellis chat`. A question is
 * answered with a query — the wrong one first, unless a lesson in the instructions says
 * otherwise — then a summary of the rows; a message asking for an export or a CSV asks for
 * `export.csv` and then reports the file (or the refusal); a turn that asks for a
 * `TopCustomersReport` is answered with the report card as JSON. The export goes to the first
 * free name of `top-customers.csv`, `top-customers-2.csv`, … in the export folder, as a
 * careful user would pick: `export.csv` never replaces a file unless asked to, so a fixed
 * name would fail every export after the first.
 */
export function deskScriptedModel(options: DeskModelOptions = {}): ScriptedModel {
  const exportDir = options.exportDir ?? '.trellis/exports';
  return new ScriptedModel((request) => deskReply(request, () => freeExportName(exportDir)), { name: 'scripted-desk' });
}

/** The first of `top-customers.csv`, `top-customers-2.csv`, … that does not exist in `dir` (relative to the working directory). */
export function freeExportName(dir: string): string {
  const stem = EXPORT_FILENAME.replace(/\.csv$/, '');
  for (let n = 1; ; n++) {
    const name = n === 1 ? EXPORT_FILENAME : `${stem}-${n}.csv`;
    if (!existsSync(join(resolve(dir), name))) return name;
  }
}

/** The reply to one request: what `deskScriptedModel` answers; `exportName` picks the file of a new export. */
export function deskReply(request: ModelRequest, exportName: () => string = () => EXPORT_FILENAME): ScriptedReply {
  const { messages } = request;
  const userAt = messages.map((m) => m.role).lastIndexOf('user');
  const question = messages[userAt]?.content ?? '';
  const since = messages.slice(userAt + 1);
  const last = since.at(-1);
  if (/\b(export|csv|file)\b/i.test(question)) {
    if (!last)
      return {
        toolCalls: [
          {
            id: callId(),
            name: 'export.csv',
            args: { sql: lastGoodQuery(messages) ?? GOOD_QUERY, filename: exportName() },
          },
        ],
      };
    const result = parse(last);
    if (result.error) return `I did not write the file: ${result.error.message}`;
    return `Saved ${String(result.rows)} rows to ${String(result.file)}.`;
  }
  if (!last) {
    const learned = messages.some((m) => m.role === 'system' && m.content.includes(LESSONS_HEADING));
    return { toolCalls: [{ id: callId(), name: 'db.search', args: { sql: learned ? GOOD_QUERY : BAD_QUERY } }] };
  }
  const result = parse(last);
  if (result.error) {
    const failures = since.filter((m) => m.role === 'tool' && parse(m).error).length;
    if (failures >= 2) return `I could not get an answer from the database: ${result.error.message}`;
    return {
      text: 'That column does not exist; retrying with the real schema.',
      toolCalls: [{ id: callId(), name: 'db.search', args: { sql: GOOD_QUERY } }],
    };
  }
  const rows = (result.rows ?? []) as { name: string; country: string; spent: number }[];
  // A typed turn (`send(…, { output: TopCustomersReport })`): the answer is the report card as JSON.
  if (request.output?.name === 'TopCustomersReport') return JSON.stringify(reportCard(rows));
  const lines = rows.map((r, i) => `${i + 1}. ${r.name} (${r.country}) — $${r.spent.toFixed(2)}`);
  return `Top customers by paid revenue:\n${lines.join('\n')}`;
}

/** The report card for the rows of the top-customers query, as the scripted model writes it. */
function reportCard(rows: readonly { name: string; country: string; spent: number }[]) {
  const total = Math.round(rows.reduce((sum, r) => sum + r.spent, 0) * 100) / 100;
  const top = rows[0];
  return {
    headline: top ? `${top.name} leads with $${top.spent.toFixed(2)} of paid revenue` : 'No paid orders yet',
    currency: 'USD',
    totalRevenue: total,
    customers: rows,
  };
}

interface ToolOutput {
  readonly error?: { readonly code: string; readonly message: string };
  readonly rows?: unknown;
  readonly file?: unknown;
}

function parse(message: ChatMessage): ToolOutput {
  try {
    return JSON.parse(message.content) as ToolOutput;
  } catch {
    return { error: { code: 'Unreadable', message: message.content } };
  }
}

/** The SQL of the most recent `db.search` call that succeeded. */
function lastGoodQuery(messages: readonly ChatMessage[]): string | undefined {
  const ok = new Set(
    messages.filter((m) => m.role === 'tool' && m.name === 'db.search' && !parse(m).error).map((m) => m.toolCallId),
  );
  for (const message of [...messages].reverse()) {
    const call = message.toolCalls?.find((c) => c.name === 'db.search' && ok.has(c.id));
    if (call) return (JSON.parse(call.arguments) as { sql: string }).sql;
  }
  return undefined;
}

/** Call ids unique across processes, so two CLI runs on one session never reuse one. */
function callId(): string {
  return `call_${randomBytes(4).toString('hex')}`;
}
