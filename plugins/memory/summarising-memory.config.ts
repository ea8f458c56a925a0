import { IsInt, Max, Min } from 'class-validator';

/** Options of {@link SummarisingMemory}. */
export class SummarisingMemoryConfig {
  /** Completed turns kept word for word; older ones are folded into the summary. Default 4. */
  @IsInt()
  @Min(0)
  @Max(1000)
  keepTurns = 4;

  /** The summary's budget in estimated tokens (characters / 4); a longer one is cut. Default 500. */
  @IsInt()
  @Min(16)
  @Max(100_000)
  summaryMaxTokens = 500;
}
