import { IsBoolean } from 'class-validator';

/** Options of {@link TokenAccountingPlugin}. */
export class TokenAccountingConfig {
  /** Keep per-user totals (by the optional `app.user_id` context key). Default true. */
  @IsBoolean()
  perUser = true;

  /** Keep a per-model breakdown in the session totals. Default true. */
  @IsBoolean()
  byModel = true;
}
