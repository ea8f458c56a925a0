import type { Command } from 'commander';
import { diagnoseSqliteStore } from '../../../index.js';
import { cliStorePath } from '../cli-app.js';
import type { CliIo } from '../cli-io.js';
import { escapeControl } from '../render/terminal-text.js';

/** `trellis doctor`: checks the session store (SQLite integrity, schema version, every session readable); exit 1 on a problem. */
export function registerDoctorCommand(program: Command, io: CliIo): void {
  program
    .command('doctor')
    .description("check the session store: SQLite's integrity check, the schema version, and that every session reads back")
    .action(async () => {
      const report = await diagnoseSqliteStore(await cliStorePath(io));
      for (const finding of report.findings) {
        io.out(`${finding.ok ? 'ok     ' : 'PROBLEM'} ${finding.check}: ${escapeControl(finding.detail)}`);
        if (finding.fix) io.out(`        fix: ${escapeControl(finding.fix)}`);
      }
      io.out(report.ok ? 'No problems found.' : 'Problems found; see the fixes above.');
      if (!report.ok) io.exitCode = 1;
    });
}
