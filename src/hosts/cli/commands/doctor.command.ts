import type { Command } from 'commander';
import {
  diagnosePostgresStore,
  diagnoseSqliteStore,
  repairPostgresStore,
  repairSqliteStore,
} from '../../../../stores.js';
import { cliStoreTarget } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { escapeControl } from '../render/terminal-text.js';

/**
 * `trellis doctor`: checks the config's session store — a SQLite file (integrity, schema
 * version, every session readable, leases) or a PostgreSQL schema (the server, schema version
 * and tables, every session readable, leases by the server's clock); exit 1 on a problem.
 * `--repair` first repairs what is safe to repair and says what it did.
 */
export function registerDoctorCommand(program: Command, io: CliIo): void {
  program
    .command('doctor')
    .description(
      "check the session store: SQLite's integrity check or the PostgreSQL server, the schema version, that every session reads back, and its leases",
    )
    .option(
      '--repair',
      'first repair what is safe to repair (stale leases; SQLite: unreadable sessions moved aside, a lost schema ledger, damaged indexes, missing tables that hold no session; PostgreSQL: an older schema migrated), saying what was done',
    )
    .action(async (options: { repair?: boolean }) => {
      const target = await cliStoreTarget(io);
      const postgres =
        target.kind === 'postgres'
          ? { url: target.url, ...(target.schema !== undefined && { schema: target.schema }) }
          : undefined;
      const path = target.kind === 'sqlite' ? target.path : target.where;
      if (options.repair) {
        const repaired = postgres ? await repairPostgresStore(postgres) : await repairSqliteStore(path);
        for (const action of repaired.actions) io.out(`REPAIRED ${escapeControl(action)}`);
        if (repaired.refused) io.out(`not repaired: ${escapeControl(repaired.refused)}`);
        else if (repaired.actions.length === 0) io.out('Nothing to repair.');
      }
      const report = postgres ? await diagnosePostgresStore(postgres) : await diagnoseSqliteStore(path);
      for (const finding of report.findings) {
        io.out(`${finding.ok ? 'ok     ' : 'PROBLEM'} ${finding.check}: ${escapeControl(finding.detail)}`);
        if (finding.fix) io.out(`        fix: ${escapeControl(finding.fix)}`);
      }
      io.out(report.ok ? 'No problems found.' : 'Problems found; see the fixes above.');
      if (!report.ok) io.exitCode = 1;
    });
}
