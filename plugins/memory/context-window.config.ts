import { IsInt, IsNumber, IsPositive, Min } from 'class-validator';

/** Options of {@link ContextWindowTransform}. */
export class ContextWindowConfig {
  /** The budget of estimated tokens for the request's messages. Required, a whole number ≥ 1. */
  @IsInt()
  @Min(1)
  maxTokens!: number;

  /** Characters counted as one token when estimating. Default 4. */
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @IsPositive()
  charsPerToken = 4;
}
