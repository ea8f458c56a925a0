#!/usr/bin/env node
/** The `trellis` executable (package.json `bin`). See docs/cli.md. */
import { missingPeersMessage } from './peer-check.js';

// Checked before anything imports them, so a missing peer is one clear line, not a stack.
const missing = missingPeersMessage();
if (missing) {
  process.stderr.write(`${missing}\n`);
  process.exitCode = 1;
} else {
  await import('reflect-metadata');
  const { processIo } = await import('./cli-io.js');
  const { runCli } = await import('./program.js');
  process.exitCode = await runCli(process.argv, processIo());
}
