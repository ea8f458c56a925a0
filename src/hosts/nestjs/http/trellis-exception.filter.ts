import { Catch, type ArgumentsHost } from '@nestjs/common';
import { BaseExceptionFilter } from '@nestjs/core';
import { TrellisError } from '../../../../index.js';
import { toHttpException } from './trellis-http-exception.js';

/**
 * Answers a `TrellisError` that reaches Nest from any HTTP handler (the app's own controllers
 * that call `session.resume`, `send`, …) as `toHttpException` does: the Trellis code in the
 * body, a 4xx for a caller's mistake (`InvalidDecision` 400, `SessionBusy` 409, …), a 500
 * without internals for a fault of the system. `TrellisModule` installs it for the whole app
 * unless `httpErrors: false`; other errors are left to Nest (and to the app's own filters).
 */
@Catch(TrellisError)
export class TrellisExceptionFilter extends BaseExceptionFilter {
  override catch(exception: TrellisError, host: ArgumentsHost): void {
    // Only HTTP answers are shaped here; other transports get the error as thrown.
    if (host.getType() !== 'http') throw exception;
    super.catch(toHttpException(exception), host);
  }
}
