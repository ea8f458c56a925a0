import { dirname, resolve } from 'node:path';
import { invocation } from './invocation.js';

/** Where the CLI reads and writes; the process streams by default, swappable in tests. */
export interface CliIo {
  /** Writes text to stdout as is (streamed model text). */
  write(text: string): void;
  /** Writes one line to stdout. */
  out(line?: string): void;
  /** Writes one line to stderr: notes and errors. */
  err(line: string): void;
  readonly stdin: NodeJS.ReadableStream;
  readonly cwd: string;
  readonly env: NodeJS.ProcessEnv;
  /**
   * How the user runs the CLI here (`npx trellis`, `npm run trellis --`, `trellis`, `node
   * <script>`): the start of each command the CLI prints, so it runs as printed. Default `trellis`.
   */
  readonly command?: string;
  /** The process exit code a command asks for (a failed turn); errors set their own. */
  exitCode: number;
  /** Calls `handler` on each Ctrl-C (SIGINT) until the returned function is called. */
  readonly onInterrupt?: (handler: () => void) => () => void;
  /** Ends the process at once with `code` (the second Ctrl-C). */
  readonly exitNow?: (code: number) => void;
  /**
   * stderr when it is a terminal a person watches, for progress redrawn in place; absent
   * when stderr is a file or a pipe, or `CI` is set, so logs get no progress bars.
   */
  readonly terminal?: { write(text: string): void; readonly columns?: number };
}

/** The streams `processIo` writes to; the process's own by default. */
export interface ProcessStreams {
  readonly stdout: NodeJS.WritableStream;
  readonly stderr: NodeJS.WritableStream;
  readonly stdin: NodeJS.ReadableStream;
}

/**
 * The real process: stdout, stderr, stdin, the working directory and environment. A closed
 * pipe (`trellis sessions | head -1`) is not an error: output to it stops quietly.
 */
export function processIo(
  streams: ProcessStreams = { stdout: process.stdout, stderr: process.stderr, stdin: process.stdin },
  env: NodeJS.ProcessEnv = process.env,
  cwd: string = process.cwd(),
): CliIo {
  const stdout = quietOnClosedPipe(streams.stdout);
  const stderr = quietOnClosedPipe(streams.stderr);
  const folder = cliCwd(env, cwd);
  return {
    write: (text) => stdout(text),
    out: (line = '') => stdout(`${line}\n`),
    err: (line) => stderr(`${line}\n`),
    stdin: streams.stdin,
    cwd: folder,
    env,
    command: invocation(env, process.argv[1], folder),
    exitCode: 0,
    onInterrupt: (handler) => {
      process.on('SIGINT', handler);
      return () => void process.off('SIGINT', handler);
    },
    exitNow: (code) => process.exit(code),
    ...(isTerminal(streams.stderr) && !env.CI
      ? {
          terminal: {
            write: stderr,
            get columns() {
              return (streams.stderr as { columns?: number }).columns;
            },
          },
        }
      : {}),
  };
}

function isTerminal(stream: NodeJS.WritableStream): boolean {
  return (stream as { isTTY?: boolean }).isTTY === true;
}

/** A writer that stops writing once the reader has gone (EPIPE); other stream errors are still raised. */
function quietOnClosedPipe(stream: NodeJS.WritableStream): (text: string) => void {
  let closed = false;
  stream.on('error', (error: NodeJS.ErrnoException) => {
    if (error?.code === 'EPIPE' || error?.code === 'ERR_STREAM_DESTROYED') {
      closed = true;
      return;
    }
    throw error;
  });
  return (text) => {
    if (closed) return;
    try {
      stream.write(text);
    } catch (error) {
      if ((error as NodeJS.ErrnoException)?.code !== 'EPIPE') throw error;
      closed = true;
    }
  };
}

/**
 * The folder the CLI works in (config, `.trellis/`): the user's folder. `npm run trellis`
 * runs in the package root, so there it is `INIT_CWD` (the folder npm was started from);
 * a process merely started under some npm script elsewhere keeps its own working directory.
 */
export function cliCwd(env: NodeJS.ProcessEnv, cwd: string): string {
  const init = env.INIT_CWD;
  if (!init) return cwd;
  // npm runs a script in its package's root: only then is INIT_CWD the user's folder rather than ours.
  if (env.npm_package_json && resolve(dirname(env.npm_package_json)) !== resolve(cwd)) return cwd;
  return resolve(init);
}
