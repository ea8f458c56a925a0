import type { JsonSchema } from '../../contract/model-provider.js';
import { allowsNull, rewriteSchema, type DialectRules, type RewrittenSchema } from './schema-rewrite.js';

type Draft = Record<string, unknown>;

/** The strict-mode schema, and what of the DTO cannot be said in it (empty when all can). */
export type StrictSchema = RewrittenSchema;

/**
 * OpenAI's strict dialect (platform.openai.com, structured outputs, "Supported schemas"):
 * types, enums, `anyOf`, local `$ref`s (recursion included), the string formats and the
 * number and array bounds it lists; every property required, optional ones nullable,
 * `additionalProperties: false` everywhere; at most 10 levels of nesting.
 */
export const OPENAI_STRICT_RULES: DialectRules = {
  label: 'OpenAI strict mode',
  keywords: new Set([
    'type',
    'enum',
    'const',
    'description',
    'minimum',
    'maximum',
    'exclusiveMinimum',
    'exclusiveMaximum',
    'multipleOf',
    'maxItems',
  ]),
  formats: new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']),
  closeObjects: true,
  allRequired: true,
  freeForm: 'problem',
  refs: 'keep',
  recursion: 'keep',
  maxDepth: 10,
};

/**
 * Rewrites a DTO's JSON Schema (as `dtoJsonSchema` derives it) into OpenAI's strict dialect:
 * every property listed in `required`, an optional one made nullable instead, and
 * `additionalProperties: false` on every object; formats and keywords strict mode does not
 * accept are dropped (validation after the reply still enforces them). What cannot be
 * expressed — a property without a type, an object without declared properties
 * (`@IsObject()`), a list without an item type, `allOf`, nesting deeper than 10 — is named in
 * `problems`, with what to change.
 *
 * @example
 * openAIStrictSchema({ type: 'object', properties: { note: { type: 'string' } }, required: [], additionalProperties: false }).schema
 * // { type: 'object', properties: { note: { type: ['string', 'null'] } }, required: ['note'], additionalProperties: false }
 */
export function openAIStrictSchema(source: JsonSchema): StrictSchema {
  return rewriteSchema(source, OPENAI_STRICT_RULES);
}

/**
 * The model's answer to a strict schema, mapped back to what the source schema expects: a
 * `null` for a property the source does not require (and does not allow to be null) becomes
 * absent, at every depth.
 */
export function dropNullOptionals(value: unknown, source: JsonSchema, root: JsonSchema = source): unknown {
  const schema = resolve(source, root);
  if (Array.isArray(value)) {
    const items = schema.items as JsonSchema | undefined;
    return items && typeof items === 'object' ? value.map((item) => dropNullOptionals(item, items, root)) : value;
  }
  if (
    typeof value !== 'object' ||
    value === null ||
    typeof schema.properties !== 'object' ||
    schema.properties === null
  )
    return value;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const properties = schema.properties as Record<string, JsonSchema>;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    const property = Object.prototype.hasOwnProperty.call(properties, key) ? properties[key] : undefined;
    if (child === null && property !== undefined && !required.has(key) && !allowsNull(resolve(property, root)))
      continue;
    out[key] = property ? dropNullOptionals(child, property, root) : child;
  }
  return out;
}

function resolve(schema: Draft, root: Draft): Draft {
  const ref = schema.$ref;
  if (typeof ref !== 'string') return schema;
  const name = ref.replace(/^#\/(\$defs|definitions)\//, '');
  const defs = {
    ...(root.definitions as Record<string, Draft> | undefined),
    ...(root.$defs as Record<string, Draft> | undefined),
  };
  return defs[name] ?? schema;
}
