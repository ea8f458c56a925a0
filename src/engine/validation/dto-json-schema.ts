import 'reflect-metadata';
import { plainToInstance } from 'class-transformer';
import { getMetadataStorage, ValidationTypes, type MetadataStorage } from 'class-validator';
import { TrellisError } from '../../errors/trellis-error.js';
import type { JsonSchema } from '../../contract/model-provider.js';
import { describedAs } from './describe.decorator.js';

type DtoClass = new () => object;
type ValidationMetadata = ReturnType<MetadataStorage['getTargetValidationMetadatas']>[number];
type SchemaDraft = Record<string, unknown>;
type Keyword = (schema: SchemaDraft, constraints: readonly unknown[]) => void;

/** One derivation: the classes being inlined now, and those met again inside themselves. */
interface Walk {
  readonly visiting: Set<DtoClass>;
  readonly recursive: Map<DtoClass, { readonly name: string; schema?: SchemaDraft }>;
}

/** How each class-validator rule reads as JSON Schema, by the rule's registered name. */
const KEYWORDS: ReadonlyMap<string, Keyword> = new Map<string, Keyword>([
  ['isString', (s) => setType(s, 'string')],
  ['isNumber', (s) => setType(s, 'number')],
  ['isInt', (s) => setType(s, 'integer')],
  ['isBoolean', (s) => setType(s, 'boolean')],
  ['isArray', (s) => setType(s, 'array')],
  ['isObject', (s) => setType(s, 'object')],
  ['isIn', (s, [values]) => setEnum(s, values)],
  ['isEnum', (s, [, values]) => setEnum(s, values)],
  ['isNotIn', (s, [values]) => Array.isArray(values) && (s.not = { enum: [...values] })],
  ['equals', (s, [value]) => (s.const = value)],
  ['min', (s, [n]) => (s.minimum = n)],
  ['max', (s, [n]) => (s.maximum = n)],
  ['isPositive', (s) => (s.exclusiveMinimum = 0)],
  ['isNegative', (s) => (s.exclusiveMaximum = 0)],
  ['minLength', (s, [n]) => (s.minLength = n)],
  ['maxLength', (s, [n]) => (s.maxLength = n)],
  ['isLength', (s, [min, max]) => Object.assign(s, defined({ minLength: min, maxLength: max }))],
  [
    'matches',
    (s, [pattern]) => setString(s, { pattern: pattern instanceof RegExp ? pattern.source : String(pattern) }),
  ],
  ['isEmail', (s) => setString(s, { format: 'email' })],
  ['isUrl', (s) => setString(s, { format: 'uri' })],
  ['isUuid', (s) => setString(s, { format: 'uuid' })],
  ['isDateString', (s) => setString(s, { format: 'date-time' })],
  ['isIso8601', (s) => setString(s, { format: 'date-time' })],
  // A Date property (with `@Type(() => Date)`) arrives from the model as an ISO string.
  ['isDate', (s) => setString(s, { format: 'date-time' })],
  ['arrayMinSize', (s, [n]) => (s.minItems = n)],
  ['arrayMaxSize', (s, [n]) => (s.maxItems = n)],
  ['arrayNotEmpty', (s) => (s.minItems = Math.max(1, Number(s.minItems ?? 0)))],
  ['arrayUnique', (s) => (s.uniqueItems = true)],
]);

/** Fallback types from TypeScript's `design:type`, used when no rule says the type. */
const DESIGN_TYPES: ReadonlyMap<unknown, string> = new Map<unknown, string>([
  [String, 'string'],
  [Number, 'number'],
  [Boolean, 'boolean'],
  [Array, 'array'],
]);

/** Classes class-transformer may report for a property that are not nested DTOs. */
const NOT_DTOS: ReadonlySet<unknown> = new Set<unknown>([Object, Array, String, Number, Boolean, Date, Map, Set]);

const cache = new WeakMap<DtoClass, JsonSchema>();

/**
 * The JSON Schema a model sees for a class-validator DTO: one property per validated field,
 * `required` unless `@IsOptional()`/`@ValidateIf()` or given a default in the class, and
 * `additionalProperties: false` because unknown properties are rejected. Nested DTOs
 * (`@ValidateNested()` + `@Type(() => X)`) are inlined. Validators it does not know add no
 * keywords. A class that contains itself is inlined once, then referred to via `$defs`.
 * The result is frozen and cached per class.
 *
 * @throws TrellisError `InvalidPlugin` for `@ValidateNested()` without class-transformer's
 * `@Type(() => X)`: such a property could never accept a value.
 *
 * @example
 * class Search { @IsString() sql!: string; @IsOptional() @IsInt() @Max(500) limit?: number }
 * dtoJsonSchema(Search)
 * // { type: 'object', properties: { sql: { type: 'string' }, limit: { type: 'integer', maximum: 500 } },
 * //   required: ['sql'], additionalProperties: false }
 */
export function dtoJsonSchema(type: DtoClass): JsonSchema {
  let schema = cache.get(type);
  if (!schema) {
    const walk: Walk = { visiting: new Set(), recursive: new Map() };
    const root = objectSchema(type, walk);
    // A new object: when the root class is itself recursive, `$defs` holds `root`.
    const defs = Object.fromEntries([...walk.recursive.values()].map((def) => [def.name, def.schema]));
    schema = deepFreeze(walk.recursive.size > 0 ? { ...root, $defs: defs } : root);
    cache.set(type, schema);
  }
  return schema;
}

function objectSchema(type: DtoClass, walk: Walk): SchemaDraft {
  walk.visiting.add(type);
  const storage = getMetadataStorage();
  const byProperty = storage.groupByPropertyName(storage.getTargetValidationMetadatas(type, '', true, false));
  const defaults = defaultsOf(type);
  const properties: SchemaDraft = {};
  const required: string[] = [];
  for (const [property, metadatas] of Object.entries(byProperty)) {
    const optional = metadatas.some((m) => m.type === ValidationTypes.CONDITIONAL_VALIDATION);
    const fallback = defaults[property];
    properties[property] = propertySchema(type, property, metadatas, fallback, walk);
    if (!optional && fallback === undefined) required.push(property);
  }
  walk.visiting.delete(type);
  const schema = { type: 'object', properties, required, additionalProperties: false };
  const def = walk.recursive.get(type);
  if (def) def.schema = schema;
  return schema;
}

/** A class that contains itself is inlined once and referred to inside itself via `$defs`. */
function refTo(type: DtoClass, walk: Walk): SchemaDraft {
  let def = walk.recursive.get(type);
  if (!def) {
    const taken = new Set([...walk.recursive.values()].map((known) => known.name));
    let name = type.name || 'Dto';
    for (let n = 2; taken.has(name); n++) name = `${type.name || 'Dto'}${n}`;
    def = { name };
    walk.recursive.set(type, def);
  }
  return { $ref: `#/$defs/${def.name}` };
}

function propertySchema(
  owner: DtoClass,
  property: string,
  metadatas: readonly ValidationMetadata[],
  fallback: unknown,
  walk: Walk,
): SchemaDraft {
  let schema: SchemaDraft = {};
  let items: SchemaDraft = {};
  let nested = false;
  let hasEach = false;
  for (const metadata of metadatas) {
    if (metadata.type === ValidationTypes.NESTED_VALIDATION) nested = true;
    const target = metadata.each ? items : schema;
    hasEach ||= metadata.each === true;
    if (metadata.name !== undefined) KEYWORDS.get(metadata.name)?.(target, metadata.constraints ?? []);
  }

  const designType: unknown = Reflect.getMetadata('design:type', owner.prototype as object, property);
  const isArray = schema.type === 'array' || hasEach || designType === Array;
  const nestedType = nested ? nestedTypeOf(owner, property) : undefined;
  const inlined =
    nestedType && (walk.visiting.has(nestedType) ? refTo(nestedType, walk) : objectSchema(nestedType, walk));

  if (isArray) {
    schema.type = 'array';
    if (inlined) items = { ...inlined, ...items };
    if (Object.keys(items).length > 0) schema.items = applyNotEmpty(items, metadatas, true);
  } else if (inlined) {
    schema = { ...inlined, ...schema };
  } else if (nested) {
    setType(schema, 'object');
  } else if (schema.type === undefined && schema.enum === undefined && schema.const === undefined) {
    const fromDesign = DESIGN_TYPES.get(designType);
    if (fromDesign) schema.type = fromDesign;
  }
  applyNotEmpty(schema, metadatas, false);

  const description = describedAs(owner, property);
  if (description !== undefined) schema.description = description;
  if (isJsonDefault(fallback)) schema.default = fallback;
  return schema;
}

/** `@IsNotEmpty()` only has a JSON Schema meaning for strings: at least one character. */
function applyNotEmpty(schema: SchemaDraft, metadatas: readonly ValidationMetadata[], each: boolean): SchemaDraft {
  const notEmpty = metadatas.some((m) => m.name === 'isNotEmpty' && (m.each === true) === each);
  if (notEmpty && schema.type === 'string') schema.minLength = Math.max(1, Number(schema.minLength ?? 0));
  return schema;
}

/**
 * The class class-transformer builds a property's value as: the DTO named by
 * `@Type(() => X)`, `Object` when there is no `@Type`, `undefined` if the probe failed.
 * class-transformer 0.5 keeps `@Type` in a storage its package root does not export, so
 * ask the transformer itself: items of a transformed `[{}]` are built as X whether the
 * property holds one X or a list of them.
 */
function probeNestedType(owner: DtoClass, property: string): unknown {
  try {
    const probe = plainToInstance(owner, { [property]: [{}] }) as Record<string, unknown>;
    const list = probe[property];
    const item: unknown = Array.isArray(list) ? list[0] : undefined;
    return typeof item === 'object' && item !== null ? item.constructor : undefined;
  } catch {
    return undefined; // a custom @Transform that rejects the probe: inline nothing
  }
}

function nestedTypeOf(owner: DtoClass, property: string): DtoClass | undefined {
  const built = probeNestedType(owner, property);
  if (built === Object) {
    // Validation would then see a plain object with no rules and reject each of its properties.
    throw new TrellisError('InvalidPlugin', `${owner.name}.${property} has @ValidateNested() but no @Type`, {
      hint: `Add @Type(() => TheNestedDto) from class-transformer to ${owner.name}.${property} so its value is built as that DTO`,
      details: { dto: owner.name, property },
    });
  }
  return typeof built === 'function' && !NOT_DTOS.has(built) ? (built as DtoClass) : undefined;
}

/** Property defaults written in the class; such a property may be left out by the model. */
function defaultsOf(type: DtoClass): Record<string, unknown> {
  try {
    return new type() as Record<string, unknown>;
  } catch {
    return {};
  }
}

/** Only plain values are worth telling the model about; `new Map()` and the like are not JSON. */
function isJsonDefault(value: unknown): boolean {
  return isJsonPrimitive(value) || (Array.isArray(value) && value.every(isJsonPrimitive));
}

function isJsonPrimitive(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean';
}

function setType(schema: SchemaDraft, type: string): void {
  // `@IsInt() @IsNumber()` together mean an integer, whichever is declared first.
  if (!(schema.type === 'integer' && type === 'number')) schema.type = type;
}

function setString(schema: SchemaDraft, keywords: SchemaDraft): void {
  setType(schema, 'string');
  Object.assign(schema, keywords);
}

function setEnum(schema: SchemaDraft, values: unknown): void {
  if (!Array.isArray(values)) return;
  schema.enum = [...values];
  const kinds = new Set(values.map((value) => typeof value));
  if (kinds.size === 1 && schema.type === undefined) {
    const [kind] = kinds;
    if (kind === 'string' || kind === 'number' || kind === 'boolean') schema.type = kind;
  }
}

function defined(keywords: SchemaDraft): SchemaDraft {
  return Object.fromEntries(Object.entries(keywords).filter(([, value]) => value !== undefined));
}

function deepFreeze<T>(value: T): T {
  if (typeof value === 'object' && value !== null && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const child of Object.values(value)) deepFreeze(child);
  }
  return value;
}
