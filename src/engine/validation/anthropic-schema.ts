import type { JsonSchema } from '../../contract/model-provider.js';
import { rewriteSchema, type DialectRules, type RewrittenSchema } from './schema-rewrite.js';

/**
 * Anthropic's structured-output dialect (docs.claude.com, structured outputs, "JSON Schema
 * limitations"): types, enums, `const`, `anyOf`, local non-recursive `$ref`s, the string
 * formats it lists, `minItems` of 0 or 1, `additionalProperties: false` on every object;
 * optional properties stay optional. No numeric, string-length or other array bounds, no
 * recursive schemas.
 */
export const ANTHROPIC_OUTPUT_RULES: DialectRules = {
  label: 'Anthropic structured outputs',
  keywords: new Set(['type', 'enum', 'const', 'description']),
  formats: new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'uri', 'ipv4', 'ipv6', 'uuid']),
  closeObjects: true,
  allRequired: false,
  freeForm: 'problem',
  refs: 'keep',
  recursion: 'problem',
  maxMinItems: 1,
};

/**
 * Rewrites a DTO's JSON Schema into what Anthropic's `output_config.format` accepts, naming
 * what it cannot express (an object without declared properties, a list without an item
 * type, a class that contains itself, `allOf`) in `problems`, with what to change. Dropped
 * bounds (`maxLength`, `minimum`, …) are still enforced by validation after the reply.
 */
export function anthropicOutputSchema(source: JsonSchema): RewrittenSchema {
  return rewriteSchema(source, ANTHROPIC_OUTPUT_RULES);
}
