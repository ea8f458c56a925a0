#!/usr/bin/env node
/** The `trellis` executable (package.json `bin`). See docs/cli.md. */
import 'reflect-metadata';
import { processIo } from './cli-io.js';
import { runCli } from './program.js';

process.exitCode = await runCli(process.argv, processIo());
