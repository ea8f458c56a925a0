import { mkdirSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { IsBoolean, IsOptional, IsString, Matches, MaxLength } from 'class-validator';
import { LoggingMiddleware, RetryMiddleware } from 'trellis';
import {
  argsOf,
  Describe,
  Hook,
  inject,
  Middleware,
  Plugin,
  PLUGIN_CONFIG,
  suspend,
  Tool,
  type ToolCallInfo,
} from 'trellis/plugin';
import { DESK_QUERIES } from '../desk-database.js';
import type { ReadOnlyQueries } from '../read-only-query.js';
import { writeExportFile } from '../safe-export-file.js';

/** The most rows one export writes. */
const MAX_EXPORT_ROWS = 10_000;
/** The most bytes of rows one export reads (as JSON). */
const MAX_EXPORT_BYTES = 16 * 1024 * 1024;

/** Input of `export.csv`. */
export class ExportInput {
  @Describe('One read-only SELECT whose rows go into the file')
  @IsString()
  @MaxLength(4000)
  sql!: string;

  @Describe('The file name: letters, digits, - and _, ending in .csv, e.g. top-customers.csv')
  @IsString()
  @Matches(/^[A-Za-z0-9_-]{1,64}\.csv$/)
  filename!: string;

  @Describe('Replace the file if it already exists; default false (an existing file is left alone and the call fails)')
  @IsOptional()
  @IsBoolean()
  overwrite?: boolean;
}

/** Config of the export plugin. */
export class ExportConfig {
  /** The folder files are written to, relative to the working directory. */
  @IsOptional()
  @IsString()
  dir = '.trellis/exports';
}

/** What `export.csv` answers once the file is written. */
export interface ExportResult {
  readonly file: string;
  readonly rows: number;
  readonly columns: readonly string[];
  /** An existing file of that name was replaced (only with `overwrite: true`). */
  readonly replaced: boolean;
}

/**
 * Writes query results to a CSV file — but only after a human approved it: the plugin's
 * `tool.gate` parks every `export.csv` call with `suspend(...)`, and the call runs once
 * the session is resumed with an `approve` decision.
 */
@Plugin({
  name: 'export',
  version: '1.0.0',
  owner: 'reporting',
  description: 'CSV exports of query results, behind a human approval',
  dependsOn: ['db'],
  config: ExportConfig,
})
@Middleware(LoggingMiddleware)
@Middleware(RetryMiddleware, { maxRetries: 2, baseDelayMs: 50 })
export class ExportPlugin {
  private readonly dir: string;

  constructor(
    @inject(DESK_QUERIES) private readonly queries: ReadOnlyQueries,
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
  async exportCsv(input: ExportInput): Promise<ExportResult> {
    const result = await this.queries.run(input.sql, {
      maxRows: MAX_EXPORT_ROWS,
      maxResultBytes: MAX_EXPORT_BYTES,
      maxCellChars: MAX_EXPORT_BYTES,
    });
    mkdirSync(resolve(this.dir), { recursive: true });
    const file = join(this.dir, input.filename);
    const lines = [result.columns.map(csvField).join(',')];
    for (const row of result.rows) lines.push(result.columns.map((c) => csvField(row[c])).join(','));
    const { replaced } = writeExportFile(resolve(file), `${lines.join('\n')}\n`, input.overwrite === true);
    return { file, rows: result.rowCount, columns: result.columns, replaced };
  }

  @Hook('tool.gate')
  requireApproval(call: ToolCallInfo) {
    if (call.tool !== 'export.csv') return undefined;
    const args = argsOf<ExportInput>(call);
    return suspend({
      message: `Write ${String(args.filename ?? 'a CSV file')}${args.overwrite === true ? ' (REPLACING the file if it exists)' : ''} with the rows of: ${String(args.sql ?? '(no query)')}`,
      allowedDecisions: ['approve', 'reject'],
    });
  }
}

/** RFC 4180: quote a field holding a comma, quote or line break, doubling inner quotes. */
export function csvField(value: unknown): string {
  const text = value === null || value === undefined ? '' : String(value);
  return /[",\r\n]/.test(text) ? `"${text.replace(/"/g, '""')}"` : text;
}
