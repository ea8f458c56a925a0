import type { ContentfulStatusCode } from 'hono/utils/http-status';
import { describeError } from '../../../errors/describe-error.js';
import { TrellisError } from '../../../../index.js';

/** The JSON body of every refusal: the code, the message, and what to do. */
export interface ErrorBody {
  readonly error: { readonly code: string; readonly message: string; readonly hint?: string };
}

/**
 * A failure as an HTTP status and a body the page shows as is. A `TrellisError` keeps its
 * code and message (an edited argument that fails the tool's input is a 400 naming the
 * field); anything else is a 500 with a one-line description.
 */
export function errorResponse(error: unknown): { status: ContentfulStatusCode; body: ErrorBody } {
  if (!TrellisError.is(error))
    return { status: 500, body: { error: { code: 'InternalError', message: describeError(error) } } };
  const status: ContentfulStatusCode =
    error.code === 'SessionNotFound'
      ? 404
      : error.code === 'ApprovalRefused'
        ? 403
        : error.code === 'SessionBusy' || error.code === 'StaleState'
          ? 409
          : error.kind === 'system'
            ? 500
            : 400;
  return {
    status,
    body: { error: { code: error.code, message: error.message, ...(error.hint ? { hint: error.hint } : {}) } },
  };
}

/** A request the server cannot use, said the same way. */
export function badRequest(message: string, hint: string): TrellisError {
  return new TrellisError('InvalidOptions', message, { hint });
}
