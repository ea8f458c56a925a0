import { IsBoolean, IsInt, Max, Min } from 'class-validator';

/** Options of {@link TranscriptMemory}. */
export class TranscriptMemoryConfig {
  /** Exchanges kept per session; the oldest go first past it. Default 1000. */
  @IsInt()
  @Min(1)
  @Max(100_000)
  maxExchanges = 1000;

  /** Keep each exchange's tool calls (name, outcome, error code). Default true. */
  @IsBoolean()
  recordToolCalls = true;

  /** The most exchanges one `memory.transcript.recall` call returns. Default 10. */
  @IsInt()
  @Min(1)
  @Max(1000)
  recallLimit = 10;
}
