import { ArrayNotEmpty, IsArray, IsBoolean, IsNumber, IsOptional, IsPositive, Matches } from 'class-validator';

/** Options of {@link MetricsPlugin}. */
export class MetricsConfig {
  /** Prefix of every metric name; a valid Prometheus name start. Default `trellis_`. */
  @Matches(/^[a-zA-Z_:][a-zA-Z0-9_:]*$/, {
    message: 'prefix must be a valid Prometheus metric name prefix (letters, digits, _ and :)',
  })
  prefix = 'trellis_';

  /** Histogram buckets in seconds, for model, tool and turn latency. */
  @IsOptional()
  @IsArray()
  @ArrayNotEmpty()
  @IsNumber({ allowNaN: false, allowInfinity: false }, { each: true })
  @IsPositive({ each: true })
  latencyBuckets?: number[];

  /** Also collect prom-client's process metrics (CPU, memory, event loop) into the registry. Default false. */
  @IsBoolean()
  processMetrics = false;
}
