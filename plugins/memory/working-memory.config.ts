import { IsInt, Max, Min } from 'class-validator';

/** Options of a working-memory plugin. */
export class WorkingMemoryConfig {
  /** The largest record, in characters of JSON; a bigger update is refused, so the model shortens it. Default 4000. */
  @IsInt()
  @Min(100)
  @Max(100_000)
  maxChars = 4000;
}
