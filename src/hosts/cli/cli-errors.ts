import { TrellisError } from '../../../index.js';
import { describeError } from '../../../plugin.js';

export { describeError };

/** Exit code of a command that ran and failed (unknown session, failed turn). */
export const EXIT_FAILURE = 1;
/** Exit code of a command line that could not be understood (bad flag, missing argument). */
export const EXIT_USAGE = 2;

/** A mistake in how the CLI was called: reported in one line, exit code 2. */
export function usageError(message: string, hint?: string): TrellisError {
  return new TrellisError('InvalidOptions', message, { hint, details: { exitCode: EXIT_USAGE } });
}

/** The exit code an error should end the process with. */
export function exitCodeOf(error: unknown): number {
  try {
    return TrellisError.is(error) && error.details.exitCode === EXIT_USAGE ? EXIT_USAGE : EXIT_FAILURE;
  } catch {
    return EXIT_FAILURE;
  }
}

/** An error as one line: `trellis: <message>` with line breaks folded. */
export function errorLine(error: unknown): string {
  return `trellis: ${clean(describeError(error)).replace(/\s*\n\s*/g, '; ')}`;
}

/**
 * An error as the lines to print: `trellis: <first line>`, then the rest of a multi-line
 * message (the field list of an invalid config, say) indented, and the hint last. No stack.
 */
export function errorLines(error: unknown): string[] {
  let message = clean(describeError(error));
  let hint: string | undefined;
  const known = attempt(() => (TrellisError.is(error) && typeof error.hint === 'string' ? error.hint : undefined));
  if (known && message.includes('\n') && message.endsWith(`. ${known}`)) {
    message = message.slice(0, -(known.length + 2));
    hint = known;
  }
  const [first = '', ...rest] = message
    .split('\n')
    .map((line) => line.trimEnd())
    .filter((line) => line.trim() !== '');
  return [
    `trellis: ${first.trim()}`,
    ...rest.map((line) => (line.startsWith('  ') ? line : `  ${line.trimStart()}`)),
    ...(hint ? [`  ${hint}`] : []),
  ];
}

/** Runs `read`, or answers `undefined` if it throws (a hostile error's getters may). */
function attempt(read: () => string | undefined): string | undefined {
  try {
    return read();
  } catch {
    return undefined;
  }
}

function clean(message: string): string {
  return message.trim().replace(/^error:\s*/i, '');
}
