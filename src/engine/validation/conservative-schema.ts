import type { JsonSchema } from '../../contract/model-provider.js';
import { rewriteSchema, type DialectRules, type RewrittenSchema } from './schema-rewrite.js';

/**
 * A subset of JSON Schema that OpenAI-compatible servers (Ollama, vLLM, llama.cpp's grammar
 * builder, DeepSeek) accept: plain types, `properties`, `required`, `items`, `enum`,
 * `const`, `anyOf` (for `oneOf` too), a few formats, numeric, length and size bounds, and
 * boolean `additionalProperties`. References are inlined (several servers do not follow
 * them); a schema that contains itself cannot be, and is a problem.
 */
export const CONSERVATIVE_RULES: DialectRules = {
  label: 'the conservative schema subset for OpenAI-compatible servers',
  keywords: new Set([
    'type',
    'enum',
    'const',
    'description',
    'minimum',
    'maximum',
    'minLength',
    'maxLength',
    'maxItems',
  ]),
  formats: new Set(['date-time', 'date', 'time', 'email', 'uuid']),
  closeObjects: false,
  allRequired: false,
  freeForm: 'keep',
  refs: 'inline',
  recursion: 'problem',
};

/** Rewrites a JSON Schema into {@link CONSERVATIVE_RULES}; what it cannot express is named in `problems`. */
export function conservativeSchema(source: JsonSchema): RewrittenSchema {
  return rewriteSchema(source, CONSERVATIVE_RULES);
}
