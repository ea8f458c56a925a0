import 'reflect-metadata';
import { appendMetadata, METADATA } from './metadata-keys.js';

/**
 * Marks a DTO property as secret: its value is replaced by `[Redacted]` wherever Trellis
 * shows or records a copy — logs, events, error messages, the CLI and traces. The tool
 * itself still receives the value.
 *
 * @example
 * class Connect { @Secret() @IsString() password!: string }
 */
export function Secret(): PropertyDecorator {
  return (target, property) => {
    appendMetadata<string>(METADATA.secrets, target.constructor, String(property));
  };
}
