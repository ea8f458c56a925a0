/** The `content-safety` plugin: blocked content, PII redaction, dangerous tools. */
export { ContentSafetyPlugin } from './content-safety.plugin.js';
export { ContentSafetyConfig, RedactionPattern } from './content-safety.config.js';
export { PiiRedactor, passesLuhn, REDACTED } from './pii-redactor.js';
