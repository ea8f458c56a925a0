import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  ArrayMinSize,
  IsInt,
  IsObject,
  IsOptional,
  IsString,
  Max,
  MaxLength,
  Min,
  ValidateNested,
} from 'class-validator';
import { ANTHROPIC_DIALECT, CONSERVATIVE_DIALECT, OPENAI_STRICT_DIALECT } from '../../../models.js';
import { anthropicOutputSchema } from '../../../src/engine/validation/anthropic-schema.js';
import { conservativeSchema } from '../../../src/engine/validation/conservative-schema.js';
import { dtoJsonSchema } from '../../../src/engine/validation/dto-json-schema.js';

class Line {
  @IsString() @MaxLength(20) sku!: string;
  @IsInt() @Min(1) @Max(99) quantity!: number;
}

class Order {
  @IsString() id!: string;
  @IsOptional() @IsString() note?: string;
  @ValidateNested({ each: true }) @Type(() => Line) @ArrayMinSize(2) lines!: Line[];
}

class Tree {
  @IsString() label!: string;
  @IsOptional() @ValidateNested({ each: true }) @Type(() => Tree) children?: Tree[];
}

class Bag {
  @IsObject() data!: Record<string, unknown>;
}

describe("Anthropic's structured-output dialect", () => {
  it('closes every object, keeps optional fields optional, drops numeric and length bounds, lowers minItems to 1', () => {
    const { schema, problems } = anthropicOutputSchema(dtoJsonSchema(Order));
    expect(problems).toEqual([]);
    expect(schema).toEqual({
      type: 'object',
      properties: {
        id: { type: 'string' },
        note: { type: 'string' },
        lines: {
          type: 'array',
          items: {
            type: 'object',
            properties: { sku: { type: 'string' }, quantity: { type: 'integer' } },
            required: ['sku', 'quantity'],
            additionalProperties: false,
          },
          minItems: 1,
        },
      },
      required: ['id', 'lines'],
      additionalProperties: false,
    });
  });

  it('refuses what it cannot express: a class that contains itself, and an object without declared properties', () => {
    expect(anthropicOutputSchema(dtoJsonSchema(Tree)).problems).toEqual([
      expect.stringContaining(
        'children[]: Tree contains itself, which Anthropic structured outputs cannot express; flatten the DTO',
      ),
    ]);
    expect(anthropicOutputSchema(dtoJsonSchema(Bag)).problems).toEqual([
      expect.stringContaining('data: is an object without declared properties'),
    ]);
  });
});

describe('the conservative subset for OpenAI-compatible servers', () => {
  it('inlines references, keeps bounds and plain keywords, and leaves free-form objects loose', () => {
    const raw = {
      type: 'object',
      $defs: { Point: { type: 'object', properties: { x: { type: 'number', multipleOf: 0.5 } }, required: ['x'] } },
      properties: {
        at: { $ref: '#/$defs/Point' },
        any: { type: 'object' },
        name: { type: 'string', maxLength: 5, pattern: '^[a-z]+$', format: 'hostname' },
      },
      required: ['at'],
      additionalProperties: false,
    };
    const { schema, problems } = conservativeSchema(raw);
    expect(problems).toEqual([]);
    expect(schema).toEqual({
      type: 'object',
      properties: {
        at: { type: 'object', properties: { x: { type: 'number' } }, required: ['x'] },
        any: { type: 'object' },
        name: { type: 'string', maxLength: 5 },
      },
      required: ['at'],
      additionalProperties: false,
    });
  });

  it('refuses a schema that contains itself, which it cannot inline', () => {
    expect(conservativeSchema(dtoJsonSchema(Tree)).problems).toEqual([expect.stringContaining('Tree contains itself')]);
  });
});

describe('schema dialects', () => {
  it('OpenAI: a tool strict mode can express goes strict; one it cannot goes as it is; an output it cannot express is a problem', () => {
    const order = OPENAI_STRICT_DIALECT.tool(dtoJsonSchema(Order));
    expect(order.strict).toBe(true);
    expect((order.schema.properties as Record<string, Record<string, unknown>>).note!.type).toEqual(['string', 'null']);
    const bag = OPENAI_STRICT_DIALECT.tool(dtoJsonSchema(Bag));
    expect(bag).toEqual({ schema: dtoJsonSchema(Bag), problems: [], strict: false });
    expect(OPENAI_STRICT_DIALECT.output(dtoJsonSchema(Bag)).problems).toHaveLength(1);
    // Compiled once per schema object.
    expect(OPENAI_STRICT_DIALECT.tool(dtoJsonSchema(Order))).toBe(order);
  });

  it('Anthropic takes tools as they are and outputs in its dialect; the conservative dialect asks for outputs in the prompt', () => {
    expect(ANTHROPIC_DIALECT.tool(dtoJsonSchema(Tree)).problems).toEqual([]);
    expect(ANTHROPIC_DIALECT.output(dtoJsonSchema(Tree)).problems).toHaveLength(1);
    expect(CONSERVATIVE_DIALECT.nativeOutput).toBe(false);
    expect(CONSERVATIVE_DIALECT.output(dtoJsonSchema(Tree)).problems).toEqual([]);
    expect(CONSERVATIVE_DIALECT.tool(dtoJsonSchema(Tree)).problems).toHaveLength(1);
  });
});
