import type { JsonSchema } from '../models/model-provider.js';

type Draft = Record<string, unknown>;

/** String formats OpenAI's strict mode accepts (platform.openai.com structured outputs, "Supported schemas"). */
const STRICT_FORMATS: ReadonlySet<string> = new Set(['date-time', 'time', 'date', 'duration', 'email', 'hostname', 'ipv4', 'ipv6', 'uuid']);
/** Keywords strict mode refuses or ignores; class-validator still checks them after the reply. */
const DROPPED: ReadonlySet<string> = new Set(['minLength', 'maxLength', 'uniqueItems', 'default', 'not']);

/** The strict-mode schema, and what of the DTO cannot be said in it (empty when all can). */
export interface StrictSchema {
  readonly schema: JsonSchema;
  readonly problems: readonly string[];
}

/**
 * Rewrites a DTO's JSON Schema (as `dtoJsonSchema` derives it) into OpenAI's strict dialect:
 * every property listed in `required`, an optional one made nullable instead, and
 * `additionalProperties: false` on every object; formats and keywords strict mode does not
 * accept are dropped (validation after the reply still enforces them). A property without a
 * type cannot be expressed: it is named in `problems`, with what to change.
 *
 * @example
 * openAIStrictSchema({ type: 'object', properties: { note: { type: 'string' } }, required: [], additionalProperties: false }).schema
 * // { type: 'object', properties: { note: { type: ['string', 'null'] } }, required: ['note'], additionalProperties: false }
 */
export function openAIStrictSchema(source: JsonSchema): StrictSchema {
  const problems: string[] = [];
  const schema = rewrite(source as Draft, '(root)', problems);
  if (schema.type !== 'object') problems.push('(root): the output must be an object DTO');
  const defs = source.$defs as Record<string, Draft> | undefined;
  if (defs) schema.$defs = Object.fromEntries(Object.entries(defs).map(([name, def]) => [name, rewrite(def, `$defs.${name}`, problems)]));
  return { schema, problems };
}

function rewrite(source: Draft, path: string, problems: string[]): Draft {
  if (typeof source.$ref === 'string') return { $ref: source.$ref };
  const out: Draft = {};
  for (const [key, value] of Object.entries(source)) {
    if (DROPPED.has(key) || key === '$defs') continue;
    if (key === 'format' && !STRICT_FORMATS.has(String(value))) continue;
    out[key] = value;
  }
  if (out.type === undefined && out.enum === undefined && out.const === undefined) {
    problems.push(`${path}: has no type; give it a type validator (@IsString(), @IsNumber(), @IsBoolean(), @ValidateNested() with @Type(), …)`);
  }
  if (source.type === 'object' && typeof source.properties === 'object' && source.properties !== null) {
    const required = new Set((source.required as string[] | undefined) ?? []);
    const properties: Draft = {};
    for (const [name, child] of Object.entries(source.properties as Record<string, Draft>)) {
      const strict = rewrite(child, path === '(root)' ? name : `${path}.${name}`, problems);
      properties[name] = required.has(name) ? strict : nullable(strict);
    }
    out.properties = properties;
    out.required = Object.keys(properties);
    out.additionalProperties = false;
  }
  if (source.type === 'array' && typeof source.items === 'object' && source.items !== null) out.items = rewrite(source.items as Draft, `${path}[]`, problems);
  return out;
}

/** An optional property as strict mode wants it: present, and allowed to be null. */
function nullable(schema: Draft): Draft {
  if (typeof schema.$ref === 'string') return { anyOf: [schema, { type: 'null' }] };
  const out: Draft = { ...schema };
  if (typeof out.type === 'string') out.type = [out.type, 'null'];
  else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
  if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

/**
 * The model's answer to a strict schema, mapped back to what the DTO expects: a `null`
 * for a property the original schema does not require becomes absent, at every depth.
 */
export function dropNullOptionals(value: unknown, source: JsonSchema, root: JsonSchema = source): unknown {
  const schema = resolve(source as Draft, root as Draft);
  if (Array.isArray(value)) {
    const items = schema.items as JsonSchema | undefined;
    return items ? value.map((item) => dropNullOptionals(item, items, root)) : value;
  }
  if (typeof value !== 'object' || value === null || typeof schema.properties !== 'object' || schema.properties === null) return value;
  const required = new Set((schema.required as string[] | undefined) ?? []);
  const properties = schema.properties as Record<string, JsonSchema>;
  const out: Record<string, unknown> = {};
  for (const [key, child] of Object.entries(value as Record<string, unknown>)) {
    if (child === null && !required.has(key) && key in properties) continue;
    out[key] = properties[key] ? dropNullOptionals(child, properties[key], root) : child;
  }
  return out;
}

function resolve(schema: Draft, root: Draft): Draft {
  const ref = schema.$ref;
  if (typeof ref !== 'string' || !ref.startsWith('#/$defs/')) return schema;
  return ((root.$defs as Record<string, Draft> | undefined)?.[ref.slice('#/$defs/'.length)] ?? schema);
}
