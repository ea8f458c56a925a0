import { IsInt, IsNumber, Max, Min } from 'class-validator';

/** Options of {@link SemanticRecall}. */
export class SemanticRecallConfig {
  /** Most exchanges recalled into one turn. Default 5. */
  @IsInt()
  @Min(1)
  @Max(50)
  topK = 5;

  /** The budget of the recalled messages, in estimated tokens (characters / 4). Default 800. */
  @IsInt()
  @Min(16)
  @Max(100_000)
  maxTokens = 800;

  /** Exchanges scoring below this cosine similarity are not recalled. Default 0.3. */
  @IsNumber({ allowNaN: false, allowInfinity: false })
  @Min(-1)
  @Max(1)
  minScore = 0.3;

  /** Exchanges kept per user; the oldest go first past it. Default 500. */
  @IsInt()
  @Min(1)
  @Max(100_000)
  maxEntries = 500;
}
