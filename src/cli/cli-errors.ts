import { TrellisError } from '../errors/trellis-error.js';

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
  return TrellisError.is(error) && error.details.exitCode === EXIT_USAGE ? EXIT_USAGE : EXIT_FAILURE;
}

/** An error as one line: `trellis: <message>` with line breaks folded. */
export function errorLine(error: unknown): string {
  const message = error instanceof Error ? error.message : String(error);
  return `trellis: ${message.trim().replace(/\s*\n\s*/g, '; ').replace(/^error:\s*/i, '')}`;
}
