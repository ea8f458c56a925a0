import { Type } from 'class-transformer';
import {
  ArrayNotEmpty,
  IsArray,
  IsIn,
  IsNotEmpty,
  IsObject,
  IsOptional,
  IsString,
  MaxLength,
  ValidateIf,
  ValidateNested,
} from 'class-validator';

/** One decision on a suspended call. */
export class DecisionDto {
  @IsString()
  @IsNotEmpty()
  callId!: string;

  /** `retry` and `skip` decide a call a crash cut off mid-run (its ticket then allows only those). */
  @IsIn(['approve', 'reject', 'edit', 'retry', 'skip'])
  decision!: 'approve' | 'reject' | 'edit' | 'retry' | 'skip';

  /** With `edit`: the arguments to run the call with instead. */
  @ValidateIf((d: DecisionDto) => d.decision === 'edit' || d.args !== undefined)
  @IsObject()
  args?: Record<string, unknown>;

  /** With `reject`: what the model is told. */
  @IsOptional()
  @IsString()
  message?: string;

  /** Why it was decided, for the audit log (approval policies may require one). Who decided comes from the request's user, never from here. */
  @IsOptional()
  @IsString()
  @MaxLength(2000)
  reason?: string;
}

/** Body of `POST /sessions/:id/decisions`. */
export class DecisionsDto {
  @IsArray()
  @ArrayNotEmpty()
  @ValidateNested({ each: true })
  @Type(() => DecisionDto)
  decisions!: DecisionDto[];
}
