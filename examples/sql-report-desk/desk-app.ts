import { pino, type Logger } from 'pino';
import { Trellis, type AgentSpec, type SessionStore } from 'trellis';
import { createLogger, TRELLIS_LOGGER } from 'trellis/plugins/middleware';
import { ReflectionPlugin } from 'trellis/plugins/reflection';
import { DESK_QUERIES, openDeskDatabase } from './desk-database.js';
import { ReadOnlyQueries } from './read-only-query.js';
import { DbPlugin } from './plugins/db.plugin.js';
import { ExportPlugin } from './plugins/export.plugin.js';
import { SqlStrategyPlugin } from './plugins/sql-strategy.plugin.js';

/** The desk's agent, without a model: `app.agent({ ...DESK_AGENT, model })`. */
export const DESK_AGENT: Omit<AgentSpec, 'model'> = {
  name: 'sql-report-desk',
  instructions:
    'You are a report desk for a small shop. Answer questions with figures from the shop database, and export results to CSV when asked.',
  maxRounds: 6,
};

/** Introduces the lessons the built-in reflection plugin adds to the instructions. */
export const LESSONS_HEADING = 'Lessons from earlier mistakes in this conversation:';

/** Where tool-call logs go unless `logFile` says otherwise. */
export const DEFAULT_DESK_LOG = '.trellis/logs/sql-report-desk.log';

export interface DeskAppOptions {
  readonly store?: SessionStore;
  /** The sample database; built from `seed.sql` when missing. */
  readonly databasePath?: string;
  /** Where `export.csv` writes. Default `.trellis/exports`. */
  readonly exportDir?: string;
  /** The JSON-lines log of tool calls, or `false` for none. */
  readonly logFile?: string | false;
}

/**
 * An app with the desk's plugins over its read-only database: its own `db`, `strategy` and
 * `export`, and Trellis's built-in `reflection`, which turns each `tool.error` into a
 * lesson kept in the session (a persistent state key) for the next turns' instructions.
 */
export async function createDeskApp(options: DeskAppOptions = {}): Promise<Trellis> {
  const database = openDeskDatabase(options.databasePath);
  const app = Trellis.create({
    store: options.store,
    providers: [
      { provide: DESK_QUERIES, useValue: new ReadOnlyQueries(database) },
      { provide: TRELLIS_LOGGER, useValue: deskLogger(options.logFile ?? DEFAULT_DESK_LOG) },
    ],
  });
  await app.install(DbPlugin);
  await app.install(SqlStrategyPlugin);
  await app.install(ReflectionPlugin, { config: { heading: LESSONS_HEADING } });
  await app.install(ExportPlugin, options.exportDir ? { config: { dir: options.exportDir } } : {});
  return app;
}

function deskLogger(file: string | false): Logger {
  if (file === false) return createLogger({ level: 'silent' });
  return createLogger({ destination: pino.destination({ dest: file, mkdir: true, sync: true }) });
}
