import { Readable } from 'node:stream';
import type { CliIo } from '../../src/hosts/cli/cli-io.js';

/** A `CliIo` that records what the CLI writes and reads `input` as stdin. */
export interface FakeCliIo extends CliIo {
  readonly stdout: string[];
  readonly stderr: string[];
  /** Everything written to stdout, as one string. */
  text(): string;
}

/** An in-process CLI environment working in `cwd`, with no API keys. */
export function fakeCliIo(cwd: string, input = ''): FakeCliIo {
  const stdout: string[] = [];
  const stderr: string[] = [];
  return {
    stdout,
    stderr,
    text: () => stdout.join(''),
    write: (text) => void stdout.push(text),
    out: (line = '') => void stdout.push(`${line}\n`),
    err: (line) => void stderr.push(line),
    stdin: Readable.from([input]),
    cwd,
    env: {},
    exitCode: 0,
  };
}
