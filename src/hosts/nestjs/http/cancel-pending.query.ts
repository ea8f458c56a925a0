import { Transform } from 'class-transformer';
import { IsOptional, ValidateBy } from 'class-validator';

/** The longest `waitForLease` an HTTP request may ask for: a request should not hold its connection longer. */
export const MAX_HTTP_LEASE_WAIT_MS = 60_000;

/** One check, so a bad value gets one message saying what to send. */
const IsLeaseWait = () =>
  ValidateBy({
    name: 'isLeaseWait',
    validator: {
      validate: (value: unknown) =>
        Number.isInteger(value) && (value as number) >= 0 && (value as number) <= MAX_HTTP_LEASE_WAIT_MS,
      defaultMessage: () =>
        `waitForLease must be a whole number of milliseconds from 0 to ${MAX_HTTP_LEASE_WAIT_MS}, e.g. ?waitForLease=5000`,
    },
  });

/** Query of `DELETE /sessions/:id/pending`. */
export class CancelPendingQuery {
  /**
   * In process: wait up to this many milliseconds for a turn of the session running
   * elsewhere (another instance on the store) instead of answering 409 `SessionBusy`.
   * With the worker queue the cancel waits in the session's turn order and this is not used.
   */
  // Only digits become a number: '', '1e3' or '-1' stay strings and are refused, not read as 0 or 1000.
  @Transform(({ value }: { value: unknown }) =>
    typeof value === 'string' && /^\d{1,9}$/.test(value) ? Number(value) : value,
  )
  @IsOptional()
  @IsLeaseWait()
  waitForLease?: number;
}
