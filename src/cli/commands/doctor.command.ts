import type { Command } from 'commander';
import { diagnoseSqliteStore, repairSqliteStore } from '../../../stores.js';
import { cliStorePath } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { escapeControl } from '../render/terminal-text.js';

/**
 * `trellis doctor`: checks the session store (SQLite integrity, schema version, every session
 * readable, leases); exit 1 on a problem. `--repair` first repairs what is safe to repair and
 * says what it did.
 */
export function registerDoctorCommand(program: Command, io: CliIo): void {
  program
    .command('doctor')
    .description("check the session store: SQLite's integrity check, the schema version, that every session reads back, and its leases")
    .option('--repair', 'first repair what is safe to repair (stale leases, unreadable sessions moved aside, a lost schema ledger, damaged indexes, missing tables that hold no session), saying what was done')
    .action(async (options: { repair?: boolean }) => {
      const path = await cliStorePath(io);
      if (options.repair) {
        const repaired = await repairSqliteStore(path);
        for (const action of repaired.actions) io.out(`REPAIRED ${escapeControl(action)}`);
        if (repaired.refused) io.out(`not repaired: ${escapeControl(repaired.refused)}`);
        else if (repaired.actions.length === 0) io.out('Nothing to repair.');
      }
      const report = await diagnoseSqliteStore(path);
      for (const finding of report.findings) {
        io.out(`${finding.ok ? 'ok     ' : 'PROBLEM'} ${finding.check}: ${escapeControl(finding.detail)}`);
        if (finding.fix) io.out(`        fix: ${escapeControl(finding.fix)}`);
      }
      io.out(report.ok ? 'No problems found.' : 'Problems found; see the fixes above.');
      if (!report.ok) io.exitCode = 1;
    });
}
