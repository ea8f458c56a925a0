import { mkdirSync, writeFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type Database from 'better-sqlite3';
import { IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { LoggingMiddleware, RetryMiddleware } from 'trellis';
import { Describe, Hook, inject, Middleware, Plugin, PLUGIN_CONFIG, suspend, Tool, type ToolCallInfo } from 'trellis/plugin';
import { DESK_DATABASE } from '../desk-database.js';
import { runReadOnlyQuery } from '../read-only-query.js';

/** The most rows one export writes. */
const MAX_EXPORT_ROWS = 10_000;

/** Input of `export.csv`. */
export class ExportInput {
  @Describe('One read-only SELECT whose rows go into the file')
  @IsString() @MaxLength(4000)
  sql!: string;

  @Describe('The file name: letters, digits, - and _, ending in .csv, e.g. top-customers.csv')
  @IsString() @Matches(/^[A-Za-z0-9_-]{1,64}\.csv$/)
  filename!: string;
}

/** Config of the export plugin. */
export class ExportConfig {
  /** The folder files are written to, relative to the working directory. */
  @IsOptional() @IsString()
  dir = '.trellis/exports';
}

/** What `export.csv` answers once the file is written. */
export interface ExportResult {
  readonly file: string;
  readonly rows: number;
  readonly columns: readonly string[];
}

/**
 * Writes query results to a CSV file — but only after a human approved it: the plugin's
 * `tool.gate` parks every `export.csv` call with `suspend(...)`, and the call runs once
 * the session is resumed with an `approve` decision.
 */
@Plugin({ name: 'export', version: '1.0.0', description: 'CSV exports of query results, behind a human approval', dependsOn: ['db'], config: ExportConfig })
@Middleware(LoggingMiddleware)
@Middleware(RetryMiddleware, { maxRetries: 2, baseDelayMs: 50 })
export class ExportPlugin {
  private readonly dir: string;

  constructor(
    @inject(DESK_DATABASE) private readonly db: Database.Database,
    @inject(PLUGIN_CONFIG) config: Partial<ExportConfig>,
  ) {
    this.dir = config.dir ?? new ExportConfig().dir;
  }

  @Tool({
    name: 'export.csv',
    input: ExportInput,
    description:
      'Save the rows of one read-only SELECT to a CSV file the user can download. Use only when the user asks for a file or an export; ' +
      'a human approves every export before it runs. Not for answering questions: use db.search for that.',
  })
  exportCsv(input: ExportInput): ExportResult {
    const result = runReadOnlyQuery(this.db, input.sql, MAX_EXPORT_ROWS);
    mkdirSync(resolve(this.dir), { recursive: true });
    const file = join(this.dir, input.filename);
    const lines = [result.columns.map(csvField).join(',')];
    for (const row of result.rows) lines.push(result.columns.map((c) => csvField(row[c])).join(','));
    writeFileSync(resolve(file), `${lines.join('\n')}\n`);
    return { file, rows: result.rowCount, columns: result.columns };
  }

  @Hook('tool.gate')
  requireApproval(call: ToolCallInfo) {
    if (call.tool !== 'export.csv') return undefined;
    const args = (typeof call.args === 'object' && call.args !== null ? call.args : {}) as Partial<ExportInput>;
    return suspend({
      message: `Write ${String(args.filename ?? 'a CSV file')} with the rows of: ${String(args.sql ?? '(no query)')}`,
      allowedDecisions: ['approve', 'reject'],
    });
  }
}

/** RFC 4180: quote a field holding a comma, quote or line break, doubling inner quotes. */
export function csvField(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
