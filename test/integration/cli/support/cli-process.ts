/**
 * The `trellis` CLI in a child process of its own, on the real process I/O (SIGINT included),
 * run from TypeScript sources: `node <TS_NODE_ARGS> cli-process.ts <dir> <args…>` runs
 * `trellis <args…>` with `<dir>` as its working directory.
 */
import 'reflect-metadata';

const [dir, ...args] = process.argv.slice(2);
process.chdir(dir!);
const { processIo } = await import('../../../../src/hosts/cli/cli-io.js');
const { runCli } = await import('../../../../src/hosts/cli/program.js');
process.exitCode = await runCli(['node', 'trellis', ...args], processIo());
