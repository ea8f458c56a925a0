import { Transform } from 'class-transformer';
import { IsBoolean, IsOptional } from 'class-validator';

/** Query of `POST /sessions/:id/cancel`. */
export class CancelTurnQuery {
  /** `false` rolls the running turn back; by default (`true`) its completed steps are kept. */
  @Transform(({ value }: { value: unknown }) => (value === 'true' ? true : value === 'false' ? false : value))
  @IsOptional()
  @IsBoolean({ message: 'keepSteps must be true or false, e.g. ?keepSteps=false' })
  keepSteps?: boolean;
}
