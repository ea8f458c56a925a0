import { IsNotEmpty, IsOptional, IsString } from 'class-validator';

/** Options of {@link OpenTelemetryPlugin}. */
export class OpenTelemetryConfig {
  /** The instrumentation scope name the tracer is obtained under. Default `trellis`. */
  @IsString()
  @IsNotEmpty()
  tracerName = 'trellis';

  /** Sets `gen_ai.provider.name` on model-call spans (e.g. `openai`), when the host knows it. */
  @IsOptional()
  @IsString()
  @IsNotEmpty()
  providerName?: string;
}
