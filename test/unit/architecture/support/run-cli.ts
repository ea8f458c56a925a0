/**
 * Child module of root-import-weight.spec.ts: runs the `trellis` command lines given as JSON
 * in TRELLIS_TEST_CLI_RUNS (one after another, as `main.ts` would, in TRELLIS_TEST_CLI_CWD)
 * and writes what each printed to TRELLIS_TEST_CLI_OUT. Writes nothing to stdout, which
 * carries the import profile.
 */
import 'reflect-metadata';
import { writeFileSync } from 'node:fs';
import { runCli } from '../../../../src/hosts/cli/program.js';
import { fakeCliIo } from '../../../support/fake-cli-io.js';

const runs = JSON.parse(process.env.TRELLIS_TEST_CLI_RUNS ?? '[]') as string[][];
const printed: { args: string[]; code: number; stdout: string; stderr: string[] }[] = [];
for (const args of runs) {
  const io = fakeCliIo(process.env.TRELLIS_TEST_CLI_CWD ?? process.cwd());
  const code = await runCli(['node', 'trellis', ...args], io);
  printed.push({ args, code, stdout: io.text(), stderr: io.stderr });
}
writeFileSync(process.env.TRELLIS_TEST_CLI_OUT!, JSON.stringify(printed));
