import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  IsArray,
  IsEmail,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  MaxLength,
  ValidateNested,
} from 'class-validator';
import { dtoJsonSchema } from '../../../src/engine/validation/dto-json-schema.js';
import { dropNullOptionals, openAIStrictSchema } from '../../../src/engine/validation/openai-strict-schema.js';
import { validateDto } from '../../../src/engine/validation/validate-dto.js';

class Address {
  @IsString() city!: string;
  @IsOptional() @IsString() zip?: string;
}

class Invoice {
  @IsString() @MaxLength(40) number!: string;
  @IsOptional() @IsInt() total?: number;
  @IsEmail() email!: string;
  @IsOptional() @IsUrl() link?: string;
  @ValidateNested() @Type(() => Address) address!: Address;
}

class Loose {
  @IsOptional() anything?: unknown;
}

class Freeform {
  @IsObject() meta!: Record<string, unknown>;
  @IsArray() tags!: unknown[];
}

class Node {
  @IsString() name!: string;
  @IsOptional() @ValidateNested({ each: true }) @Type(() => Node) children?: Node[];
}

describe('openAIStrictSchema', () => {
  const { schema, problems } = openAIStrictSchema(dtoJsonSchema(Invoice));
  const properties = schema.properties as Record<string, Record<string, unknown>>;

  it('lists every property as required, optional ones as nullable, and closes every object', () => {
    expect(problems).toEqual([]);
    expect(schema.required).toEqual(['number', 'total', 'email', 'link', 'address']);
    expect(schema.additionalProperties).toBe(false);
    expect(properties.total!.type).toEqual(['integer', 'null']);
    expect(properties.number!.type).toBe('string');
    expect(properties.address!.required).toEqual(['city', 'zip']);
    expect(properties.address!.additionalProperties).toBe(false);
    expect((properties.address!.properties as Record<string, Record<string, unknown>>).zip!.type).toEqual([
      'string',
      'null',
    ]);
  });

  it('keeps supported formats and drops the ones and keywords strict mode refuses', () => {
    expect(properties.email!.format).toBe('email');
    expect(properties.link!.format).toBeUndefined();
    expect(properties.number!.maxLength).toBeUndefined();
  });

  it('names a property it cannot express, with what to change', () => {
    const loose = openAIStrictSchema(dtoJsonSchema(Loose));
    expect(loose.problems).toEqual([
      expect.stringContaining('anything: has no type; OpenAI strict mode needs one: give it a type validator'),
    ]);
  });

  it('refuses an object without declared properties (@IsObject()) and a list without an item type, and still closes them', () => {
    const { schema: free, problems } = openAIStrictSchema(dtoJsonSchema(Freeform));
    expect(problems).toEqual([
      expect.stringContaining(
        'meta: is an object without declared properties (a map, or @IsObject()); OpenAI strict mode needs every property named',
      ),
      expect.stringContaining(
        'tags: is a list without an item type; OpenAI strict mode needs one: add a validator with { each: true }',
      ),
    ]);
    expect((free.properties as Record<string, Record<string, unknown>>).meta).toEqual({
      type: 'object',
      properties: {},
      required: [],
      additionalProperties: false,
    });
  });

  it('keeps a recursive DTO as $defs references, which strict mode accepts, and refuses nesting deeper than 10', () => {
    const { schema, problems } = openAIStrictSchema(dtoJsonSchema(Node));
    expect(problems).toEqual([]);
    expect((schema.properties as Record<string, Record<string, unknown>>).children).toEqual({
      type: ['array', 'null'],
      items: { $ref: '#/$defs/Node' },
    });
    expect(schema.$defs).toBeDefined();
    let deep: Record<string, unknown> = {
      type: 'object',
      properties: { leaf: { type: 'string' } },
      required: ['leaf'],
    };
    for (let n = 0; n < 11; n++) deep = { type: 'object', properties: { down: deep }, required: ['down'] };
    expect(openAIStrictSchema(deep).problems).toEqual([
      expect.stringContaining('nests objects 12 levels deep; OpenAI strict mode takes at most 10'),
    ]);
  });

  it('reads raw schemas (MCP tools) by an allow-list: oneOf becomes anyOf, allOf and maps are problems, unknown keywords are dropped', () => {
    const raw = {
      type: 'object',
      properties: {
        mode: { oneOf: [{ const: 'a' }, { const: 'b' }] },
        extra: { type: 'object', additionalProperties: { type: 'string' } },
        both: { allOf: [{ type: 'string' }, { minLength: 2 }] },
      },
      required: ['mode'],
      $schema: 'http://json-schema.org/draft-07/schema#',
      'x-vendor': true,
    };
    const { schema, problems } = openAIStrictSchema(raw);
    expect(schema.$schema).toBeUndefined();
    expect(schema['x-vendor']).toBeUndefined();
    expect((schema.properties as Record<string, unknown>).mode).toEqual({ anyOf: [{ const: 'a' }, { const: 'b' }] });
    expect(problems).toEqual([
      expect.stringContaining('extra: is an object without declared properties'),
      expect.stringContaining('both: uses allOf'),
    ]);
  });
});

describe('dropNullOptionals', () => {
  it('turns null optionals back into absent fields so the DTO validates', () => {
    const source = dtoJsonSchema(Invoice);
    const answer = { number: 'A-1', total: null, email: 'a@b.co', link: null, address: { city: 'Oslo', zip: null } };
    // @IsOptional() lets null through: unmapped, the instance would carry null where its type says absent.
    const unmapped = validateDto(Invoice, answer);
    expect(unmapped.ok && unmapped.value.total).toBeNull();
    const mapped = dropNullOptionals(answer, source);
    expect(mapped).toEqual({ number: 'A-1', email: 'a@b.co', address: { city: 'Oslo' } });
    const checked = validateDto(Invoice, mapped);
    expect(checked.ok).toBe(true);
    expect(checked.ok && checked.value.total).toBeUndefined();
  });

  it('keeps a null the source allows, and maps nulls inside lists of nested DTOs', () => {
    const source = {
      type: 'object',
      properties: {
        a: { type: ['string', 'null'] },
        list: { type: 'array', items: { type: 'object', properties: { b: { type: 'string' } }, required: [] } },
      },
      required: [],
    };
    expect(dropNullOptionals({ a: null, list: [{ b: null }, { b: 'x' }] }, source)).toEqual({
      a: null,
      list: [{}, { b: 'x' }],
    });
  });

  it('keeps a null for a required field, so validation reports it', () => {
    const mapped = dropNullOptionals({ number: null, email: 'a@b.co', address: { city: 'x' } }, dtoJsonSchema(Invoice));
    expect(mapped).toEqual({ number: null, email: 'a@b.co', address: { city: 'x' } });
    expect(validateDto(Invoice, mapped).ok).toBe(false);
  });
});
