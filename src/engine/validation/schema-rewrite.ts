import type { JsonSchema } from '../../contract/model-provider.js';

type Draft = Record<string, unknown>;

/** A schema rewritten for one provider, and what of the source it cannot say (empty when all can). */
export interface RewrittenSchema {
  readonly schema: JsonSchema;
  readonly problems: readonly string[];
}

/**
 * What one provider's JSON Schema dialect keeps, as data: {@link rewriteSchema} applies it.
 * Keywords it does not keep are dropped (validation after the reply still enforces them);
 * what it cannot express at all is reported as a problem, with what to change.
 */
export interface DialectRules {
  /** The dialect as problems name it, e.g. `OpenAI strict mode`. */
  readonly label: string;
  /** Value keywords kept as they are (`type`, `enum`, `minimum`, …); structure is handled apart. */
  readonly keywords: ReadonlySet<string>;
  /** `format` values kept; others are dropped. */
  readonly formats: ReadonlySet<string>;
  /** `additionalProperties: false` on every object (strict dialects require it). */
  readonly closeObjects: boolean;
  /** Every property listed in `required`, optional ones made nullable (OpenAI strict). */
  readonly allRequired: boolean;
  /** An object without declared properties, an array without items, a value without a type: `problem`, or kept loose. */
  readonly freeForm: 'problem' | 'keep';
  /** `$ref` kept (with `$defs`), or inlined (servers that cannot follow references). */
  readonly refs: 'keep' | 'inline';
  /** A schema that contains itself: kept, or a problem. */
  readonly recursion: 'keep' | 'problem';
  /** The largest `minItems` the dialect accepts (Anthropic: 1); larger ones are lowered. */
  readonly maxMinItems?: number;
  /** The deepest nesting of objects the dialect accepts (OpenAI: 10). */
  readonly maxDepth?: number;
}

interface Walk {
  readonly rules: DialectRules;
  readonly problems: string[];
  readonly defs: Readonly<Record<string, Draft>>;
  readonly recursive: ReadonlySet<string>;
  readonly inlining: Set<string>;
  /** Recursive definitions already reported, so each is named once. */
  readonly reported: Set<string>;
  deepest: number;
}

/** Keys whose value is a schema or a list of them: rewritten, never copied. */
const STRUCTURE = new Set([
  'properties',
  'required',
  'additionalProperties',
  'patternProperties',
  'items',
  'anyOf',
  'oneOf',
  'allOf',
  '$ref',
  '$defs',
  'definitions',
  'format',
  'minItems',
]);

/**
 * Rewrites a JSON Schema (a DTO's, as `dtoJsonSchema` derives it, or a raw one such as an MCP
 * tool's) into the dialect `rules` describe: the one compiler every provider's dialect is
 * an instance of (see `openAIStrictSchema`, `anthropicOutputSchema`, `conservativeSchema`).
 * Pure and linear in the schema's size.
 */
export function rewriteSchema(source: JsonSchema, rules: DialectRules): RewrittenSchema {
  const root = source;
  const defs = {
    ...(isRecord(root.definitions) ? root.definitions : {}),
    ...(isRecord(root.$defs) ? root.$defs : {}),
  } as Record<string, Draft>;
  const walk: Walk = {
    rules,
    problems: [],
    defs,
    recursive: recursiveDefs(defs),
    inlining: new Set(),
    reported: new Set(),
    deepest: 0,
  };
  const schema = rewrite(root, '(root)', walk, 1);
  if (root.type !== undefined && !isObjectType(root))
    walk.problems.push('(root): must be an object (a DTO class); a list or a single value cannot be the schema');
  if (rules.refs === 'keep' && Object.keys(defs).length > 0) {
    schema.$defs = Object.fromEntries(
      Object.entries(defs).map(([name, def]) => [name, rewrite(def, `$defs.${name}`, walk, 1)]),
    );
  }
  if (rules.maxDepth !== undefined && walk.deepest > rules.maxDepth) {
    walk.problems.push(
      `(root): nests objects ${walk.deepest} levels deep; ${rules.label} takes at most ${rules.maxDepth}: flatten the DTO`,
    );
  }
  return { schema, problems: walk.problems };
}

function rewrite(node: Draft, path: string, walk: Walk, depth: number): Draft {
  const { rules, problems } = walk;
  if (typeof node.$ref === 'string') return reference(node.$ref, path, walk, depth);
  const out: Draft = {};
  for (const key in node) {
    if (!Object.prototype.hasOwnProperty.call(node, key) || STRUCTURE.has(key) || !rules.keywords.has(key)) continue;
    out[key] = node[key];
  }
  if (typeof node.format === 'string' && rules.formats.has(node.format)) out.format = node.format;
  const unions = [
    ...(Array.isArray(node.anyOf) ? node.anyOf : []),
    ...(Array.isArray(node.oneOf) ? node.oneOf : []),
  ] as Draft[];
  if (unions.length > 0) out.anyOf = unions.map((member, at) => rewrite(member, `${path}|${at}`, walk, depth));
  if (Array.isArray(node.allOf)) {
    if (node.allOf.length === 1 && isRecord(node.allOf[0]))
      Object.assign(out, rewrite(node.allOf[0], path, walk, depth));
    else problems.push(`${path}: uses allOf, which ${rules.label} cannot express; describe it as one object`);
  }
  const typed =
    node.type !== undefined ||
    node.enum !== undefined ||
    node.const !== undefined ||
    unions.length > 0 ||
    Array.isArray(node.allOf);
  if (!typed && rules.freeForm === 'problem') {
    problems.push(
      `${path}: has no type; ${rules.label} needs one: give it a type validator (@IsString(), @IsNumber(), @IsBoolean(), @ValidateNested() with @Type(), …)`,
    );
  }
  if (hasType(node, 'object')) object(node, out, path, walk, depth);
  if (hasType(node, 'array')) array(node, out, path, walk, depth);
  return out;
}

function object(node: Draft, out: Draft, path: string, walk: Walk, depth: number): void {
  const { rules, problems } = walk;
  walk.deepest = Math.max(walk.deepest, depth);
  const properties = isRecord(node.properties) ? (node.properties as Record<string, Draft>) : undefined;
  const names = properties === undefined ? [] : Object.keys(properties);
  // An object with no properties is free-form unless it is closed (`additionalProperties: false`: always `{}`).
  if (
    (names.length === 0 && node.additionalProperties !== false) ||
    isRecord(node.patternProperties) ||
    isRecord(node.additionalProperties)
  ) {
    if (rules.freeForm === 'problem') {
      problems.push(
        `${path}: is an object without declared properties (a map, or @IsObject()); ${rules.label} needs every property named: use a nested DTO (@ValidateNested() with @Type(() => X)), or a list of { key, value } DTOs`,
      );
    }
  }
  if (properties !== undefined && names.length > 0) {
    const required = new Set(Array.isArray(node.required) ? (node.required as string[]) : []);
    const rewritten: Draft = {};
    for (const name of names) {
      const child = rewrite(properties[name]!, path === '(root)' ? name : `${path}.${name}`, walk, depth + 1);
      rewritten[name] = rules.allRequired && !required.has(name) ? nullable(child) : child;
    }
    out.properties = rewritten;
    const listed = rules.allRequired ? names : names.filter((name) => required.has(name));
    if (rules.allRequired || listed.length > 0) out.required = listed;
  } else if (rules.closeObjects) {
    out.properties = {};
    out.required = [];
  }
  if (rules.closeObjects) out.additionalProperties = false;
  else if (typeof node.additionalProperties === 'boolean') out.additionalProperties = node.additionalProperties;
}

function array(node: Draft, out: Draft, path: string, walk: Walk, depth: number): void {
  const { rules, problems } = walk;
  if (isRecord(node.items)) out.items = rewrite(node.items, `${path}[]`, walk, depth);
  else if (rules.freeForm === 'problem')
    problems.push(
      `${path}: is a list without an item type; ${rules.label} needs one: add a validator with { each: true } (@IsString({ each: true }), …) or @ValidateNested({ each: true }) with @Type(() => X)`,
    );
  if (typeof node.minItems === 'number')
    out.minItems = rules.maxMinItems === undefined ? node.minItems : Math.min(node.minItems, rules.maxMinItems);
}

function reference(ref: string, path: string, walk: Walk, depth: number): Draft {
  const name = ref.startsWith('#/$defs/')
    ? ref.slice('#/$defs/'.length)
    : ref.startsWith('#/definitions/')
      ? ref.slice('#/definitions/'.length)
      : undefined;
  const def = name === undefined ? undefined : walk.defs[name];
  if (def === undefined) {
    walk.problems.push(
      `${path}: refers to ${ref}, which is not defined in the schema; ${walk.rules.label} follows only local #/$defs references`,
    );
    return {};
  }
  if (walk.recursive.has(name!) && walk.rules.recursion === 'problem') {
    if (!walk.reported.has(name!)) {
      walk.reported.add(name!);
      walk.problems.push(
        `${path}: ${name} contains itself, which ${walk.rules.label} cannot express; flatten the DTO (a fixed depth of nested DTOs)`,
      );
    }
    return {};
  }
  if (walk.rules.refs === 'keep') return { $ref: `#/$defs/${name}` };
  // A cycle the rules keep cannot be inlined: it stays a reference.
  if (walk.inlining.has(name!)) return { $ref: `#/$defs/${name}` };
  walk.inlining.add(name!);
  const inlined = rewrite(def, path, walk, depth);
  walk.inlining.delete(name!);
  return inlined;
}

/** An optional property as strict mode wants it: present, and allowed to be null. */
function nullable(schema: Draft): Draft {
  if (typeof schema.$ref === 'string') return { anyOf: [schema, { type: 'null' }] };
  if (Array.isArray(schema.anyOf))
    return allowsNull(schema) ? schema : { ...schema, anyOf: [...schema.anyOf, { type: 'null' }] };
  if (schema.const !== undefined) return { anyOf: [schema, { type: 'null' }] };
  const out: Draft = { ...schema };
  if (typeof out.type === 'string') out.type = [out.type, 'null'];
  else if (Array.isArray(out.type) && !out.type.includes('null')) out.type = [...out.type, 'null'];
  if (Array.isArray(out.enum) && !out.enum.includes(null)) out.enum = [...out.enum, null];
  return out;
}

/** Whether a schema already lets a value be null. */
export function allowsNull(schema: JsonSchema): boolean {
  const s = schema;
  if (s.type === 'null' || (Array.isArray(s.type) && s.type.includes('null'))) return true;
  if (Array.isArray(s.enum) && s.enum.includes(null)) return true;
  return Array.isArray(s.anyOf) && s.anyOf.some((member) => isRecord(member) && allowsNull(member));
}

/** The names of `$defs` that reach themselves through references. */
function recursiveDefs(defs: Readonly<Record<string, Draft>>): Set<string> {
  const edges = new Map<string, Set<string>>();
  for (const [name, def] of Object.entries(defs)) edges.set(name, refsIn(def, new Set()));
  const recursive = new Set<string>();
  for (const start of edges.keys()) {
    const seen = new Set<string>();
    const stack = [...(edges.get(start) ?? [])];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (next === start) {
        recursive.add(start);
        break;
      }
      if (seen.has(next)) continue;
      seen.add(next);
      stack.push(...(edges.get(next) ?? []));
    }
  }
  return recursive;
}

function refsIn(node: unknown, out: Set<string>): Set<string> {
  if (Array.isArray(node)) {
    for (const item of node) refsIn(item, out);
  } else if (isRecord(node)) {
    const ref = node.$ref;
    if (typeof ref === 'string') out.add(ref.replace(/^#\/(\$defs|definitions)\//, ''));
    for (const key in node) if (key !== '$defs' && key !== 'definitions') refsIn(node[key], out);
  }
  return out;
}

function hasType(node: Draft, type: string): boolean {
  return node.type === type || (Array.isArray(node.type) && node.type.includes(type));
}

function isObjectType(node: Draft): boolean {
  return node.type === 'object';
}

function isRecord(value: unknown): value is Draft {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
