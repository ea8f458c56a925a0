/**
 * `trellis/plugins/content-safety`: the `content-safety` plugin (blocked content, PII
 * redaction, dangerous tools) with its config classes and redactor. See docs/plugins/content-safety.md.
 */
export { ContentSafetyPlugin } from './content-safety.plugin.js';
export { ContentSafetyConfig, RedactionPattern } from './content-safety.config.js';
export { PiiRedactor, passesLuhn } from './pii-redactor.js';
