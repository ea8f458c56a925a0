import { HttpException, HttpStatus } from '@nestjs/common';
import { TrellisError } from '../../../../index.js';

const STATUS: Readonly<Record<string, HttpStatus>> = {
  InvalidDecision: HttpStatus.BAD_REQUEST,
  InvalidOptions: HttpStatus.BAD_REQUEST,
  ToolInput: HttpStatus.BAD_REQUEST,
  AuthDenied: HttpStatus.FORBIDDEN,
  ApprovalRefused: HttpStatus.FORBIDDEN,
  Unauthenticated: HttpStatus.UNAUTHORIZED,
  SessionNotFound: HttpStatus.NOT_FOUND,
  SessionBusy: HttpStatus.CONFLICT,
  StaleState: HttpStatus.CONFLICT,
  NotStarted: HttpStatus.SERVICE_UNAVAILABLE,
};

/** The body of an HTTP error that came from Trellis: the status, the Trellis code, the message. */
export interface TrellisHttpErrorBody {
  readonly statusCode: number;
  readonly code: string;
  readonly message: string;
}

/**
 * A Trellis error as a Nest `HttpException` carrying the Trellis `code` (a client's mistake
 * gets a 4xx, a fault of the system a 500 without its internals); anything else is returned
 * unchanged for Nest's own handling.
 */
export function toHttpException(error: unknown): unknown {
  if (error instanceof HttpException || !TrellisError.is(error)) return error;
  const status = STATUS[error.code] ?? HttpStatus.INTERNAL_SERVER_ERROR;
  const message =
    status === HttpStatus.INTERNAL_SERVER_ERROR && error.kind === 'system' ? 'Internal error' : error.message;
  const body: TrellisHttpErrorBody = { statusCode: status, code: error.code, message };
  return new HttpException(body, status, { cause: error });
}
