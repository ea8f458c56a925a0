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
  /** The process exit code a command asks for (a failed turn); errors set their own. */
  exitCode: number;
}

/** The real process: stdout, stderr, stdin, the working directory and environment. */
export function processIo(): CliIo {
  return {
    write: (text) => void process.stdout.write(text),
    out: (line = '') => void process.stdout.write(`${line}\n`),
    err: (line) => void process.stderr.write(`${line}\n`),
    stdin: process.stdin,
    cwd: process.cwd(),
    env: process.env,
    exitCode: 0,
  };
}
