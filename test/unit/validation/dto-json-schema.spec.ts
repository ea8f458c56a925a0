import 'reflect-metadata';
import { Type } from 'class-transformer';
import {
  ArrayMaxSize,
  ArrayMinSize,
  ArrayNotEmpty,
  Equals,
  IsArray,
  IsBoolean,
  IsDateString,
  IsEmail,
  IsEnum,
  IsIn,
  IsInt,
  IsISO8601,
  IsNotEmpty,
  IsNumber,
  IsObject,
  IsOptional,
  IsString,
  IsUrl,
  Matches,
  Max,
  MaxLength,
  Min,
  MinLength,
  Validate,
  ValidateIf,
  ValidateNested,
  ValidatorConstraint,
  type ValidatorConstraintInterface,
} from 'class-validator';
import { Describe } from '../../../src/engine/validation/describe.decorator.js';
import { dtoJsonSchema } from '../../../src/engine/validation/dto-json-schema.js';
import { validateDto } from '../../../src/engine/validation/validate-dto.js';

type Schema = {
  type?: string;
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties?: boolean;
};

function schemaOf(type: new () => object): Schema {
  return dtoJsonSchema(type) as unknown as Schema;
}

function prop(type: new () => object, name: string): Record<string, unknown> | undefined {
  return schemaOf(type).properties[name];
}

enum Color {
  Red = 'red',
  Green = 'green',
}

enum Level {
  Low = 1,
  High = 2,
}

class Scalars {
  @IsString() name!: string;
  @IsNumber() ratio!: number;
  @IsInt() count!: number;
  @IsBoolean() active!: boolean;
  @IsNumber() @IsInt() both!: number;
}

class Constraints {
  @IsInt() @Min(1) @Max(500) limit!: number;
  @IsString() @MinLength(2) @MaxLength(40) title!: string;
  @IsString() @Matches(/^[a-z]+$/) slug!: string;
  @IsEmail() email!: string;
  @IsUrl() homepage!: string;
  @IsDateString() since!: string;
  @IsISO8601() until!: string;
  @IsIn(['asc', 'desc']) order!: string;
  @IsEnum(Color) color!: Color;
  @IsEnum(Level) level!: Level;
  @Equals('v1') version!: string;
  @IsString() @IsNotEmpty() label!: string;
  @IsObject() meta!: Record<string, unknown>;
}

class Arrays {
  @IsArray() @IsString({ each: true }) @ArrayMinSize(1) @ArrayMaxSize(5) tags!: string[];
  @IsInt({ each: true }) @Min(0, { each: true }) ids!: number[];
  @IsArray() @ArrayNotEmpty() anything!: unknown[];
}

class Point {
  @IsNumber() x!: number;
  @IsNumber() y!: number;
}

class Shape {
  @Describe('Where the shape is anchored') @ValidateNested() @Type(() => Point) origin!: Point;
  @IsArray() @ArrayMaxSize(10) @ValidateNested({ each: true }) @Type(() => Point) points!: Point[];
  @IsOptional() @ValidateNested() @Type(() => Shape) parent?: Shape;
}

class Drawing {
  @ValidateNested({ each: true }) @Type(() => Shape) shapes!: Shape[];
}

class Optionals {
  @IsString() required!: string;
  @IsOptional() @IsString() optional?: string;
  @ValidateIf((o: Optionals) => o.required === 'x') @IsString() conditional?: string;
  @IsInt() defaulted = 10;
  @IsString({ each: true }) listDefault: string[] = ['a'];
  @IsOptional() anyValue?: string;
  unvalidated?: string;
}

@ValidatorConstraint({ name: 'isEven' })
class IsEven implements ValidatorConstraintInterface {
  validate(value: unknown): boolean {
    return typeof value === 'number' && value % 2 === 0;
  }
}

class Custom {
  @Validate(IsEven) even!: number;
  @IsInt() @Validate(IsEven) evenInt!: number;
}

class Described {
  @Describe('A read-only SELECT statement') @IsString() sql!: string;
}

class Base {
  @IsString() id!: string;
}

class Derived extends Base {
  @IsInt() size!: number;
}

describe('dtoJsonSchema', () => {
  describe('the object', () => {
    it('is a closed object listing validated properties and the required ones', () => {
      expect(dtoJsonSchema(Described)).toEqual({
        type: 'object',
        properties: { sql: { type: 'string', description: 'A read-only SELECT statement' } },
        required: ['sql'],
        additionalProperties: false,
      });
    });

    it('includes properties validated in a parent class', () => {
      expect(schemaOf(Derived).properties).toEqual({ id: { type: 'string' }, size: { type: 'integer' } });
      expect([...schemaOf(Derived).required].sort()).toEqual(['id', 'size']);
    });
  });

  describe('scalar types', () => {
    it('maps IsString, IsNumber, IsInt and IsBoolean', () => {
      expect(schemaOf(Scalars).properties).toMatchObject({
        name: { type: 'string' },
        ratio: { type: 'number' },
        count: { type: 'integer' },
        active: { type: 'boolean' },
      });
    });

    it('keeps integer when IsInt and IsNumber are combined', () => {
      expect(prop(Scalars, 'both')).toEqual({ type: 'integer' });
    });
  });

  describe('constraints', () => {
    it('maps Min/Max to minimum/maximum', () => {
      expect(prop(Constraints, 'limit')).toEqual({ type: 'integer', minimum: 1, maximum: 500 });
    });

    it('maps MinLength/MaxLength and Matches', () => {
      expect(prop(Constraints, 'title')).toEqual({ type: 'string', minLength: 2, maxLength: 40 });
      expect(prop(Constraints, 'slug')).toEqual({ type: 'string', pattern: '^[a-z]+$' });
    });

    it('maps IsEmail, IsUrl, IsDateString and IsISO8601 to formats', () => {
      expect(prop(Constraints, 'email')).toEqual({ type: 'string', format: 'email' });
      expect(prop(Constraints, 'homepage')).toEqual({ type: 'string', format: 'uri' });
      expect(prop(Constraints, 'since')).toEqual({ type: 'string', format: 'date-time' });
      expect(prop(Constraints, 'until')).toEqual({ type: 'string', format: 'date-time' });
    });

    it('maps IsIn and IsEnum to enum values (string and numeric enums)', () => {
      expect(prop(Constraints, 'order')).toEqual({ type: 'string', enum: ['asc', 'desc'] });
      expect(prop(Constraints, 'color')).toEqual({ type: 'string', enum: ['red', 'green'] });
      expect(prop(Constraints, 'level')).toEqual({ type: 'number', enum: [1, 2] });
    });

    it('maps Equals to const, IsNotEmpty on a string to minLength 1, IsObject to object', () => {
      expect(prop(Constraints, 'version')).toEqual({ const: 'v1' });
      expect(prop(Constraints, 'label')).toEqual({ type: 'string', minLength: 1 });
      expect(prop(Constraints, 'meta')).toEqual({ type: 'object' });
    });
  });

  describe('arrays', () => {
    it('maps IsArray, `each` item rules and ArrayMinSize/ArrayMaxSize', () => {
      expect(prop(Arrays, 'tags')).toEqual({ type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 5 });
    });

    it('treats `each` rules as item rules even without IsArray', () => {
      expect(prop(Arrays, 'ids')).toEqual({ type: 'array', items: { type: 'integer', minimum: 0 } });
    });

    it('maps ArrayNotEmpty to minItems 1 and leaves items open when unconstrained', () => {
      expect(prop(Arrays, 'anything')).toEqual({ type: 'array', minItems: 1 });
    });
  });

  describe('nested DTOs', () => {
    const point = {
      type: 'object',
      properties: { x: { type: 'number' }, y: { type: 'number' } },
      required: ['x', 'y'],
      additionalProperties: false,
    };

    it('inlines a nested DTO as a closed object, keeping the property description', () => {
      expect(prop(Shape, 'origin')).toEqual({ ...point, description: 'Where the shape is anchored' });
    });

    it('inlines an array of nested DTOs as items', () => {
      expect(prop(Shape, 'points')).toEqual({ type: 'array', maxItems: 10, items: point });
    });

    it('inlines recursively through several levels', () => {
      const shapes = prop(Drawing, 'shapes') as { type: string; items: Schema };
      expect(shapes.type).toBe('array');
      expect(shapes.items.properties.points).toEqual({ type: 'array', maxItems: 10, items: point });
    });

    it('refers to a class that contains itself through $defs instead of recursing forever', () => {
      const { $defs, ...shape } = dtoJsonSchema(Shape) as Schema & { $defs: Record<string, unknown> };
      expect(shape.properties.parent).toEqual({ $ref: '#/$defs/Shape' });
      expect($defs).toEqual({ Shape: shape });
      expect(shape.required).not.toContain('parent');
    });

    it('inlines a recursive class once where it is first met', () => {
      const shapes = prop(Drawing, 'shapes') as { items: Schema };
      expect(shapes.items.properties.parent).toEqual({ $ref: '#/$defs/Shape' });
      expect((dtoJsonSchema(Drawing) as { $defs?: unknown }).$defs).toEqual({ Shape: shapes.items });
    });

    it('stays serializable when the root class is recursive', () => {
      expect(JSON.parse(JSON.stringify(dtoJsonSchema(Shape)))).toEqual(dtoJsonSchema(Shape));
    });

    it('refuses ValidateNested without @Type, naming the property and the fix', () => {
      class Untyped {
        @ValidateNested() point!: Point;
      }
      expect(() => dtoJsonSchema(Untyped)).toThrow(expect.objectContaining({ code: 'InvalidPlugin' }));
      expect(() => dtoJsonSchema(Untyped)).toThrow(/Untyped\.point .*Add @Type\(\(\) => TheNestedDto\)/);
    });

    it('describes DTOs without cycles with no $defs', () => {
      expect(dtoJsonSchema(Arrays)).not.toHaveProperty('$defs');
    });
  });

  describe('required and optional', () => {
    it('leaves out of `required` what IsOptional, ValidateIf or a class default makes optional', () => {
      expect(schemaOf(Optionals).required).toEqual(['required']);
    });

    it('states class defaults as `default`', () => {
      expect(prop(Optionals, 'defaulted')).toEqual({ type: 'integer', default: 10 });
      expect(prop(Optionals, 'listDefault')).toEqual({ type: 'array', items: { type: 'string' }, default: ['a'] });
    });

    it('lists an IsOptional-only property with its declared type, and omits an unvalidated one', () => {
      expect(prop(Optionals, 'anyValue')).toEqual({ type: 'string' });
      expect(schemaOf(Optionals).properties).not.toHaveProperty('unvalidated');
    });

    it('agrees with validateDto about what may be left out', () => {
      expect(validateDto(Optionals, { required: 'y' }).ok).toBe(true);
    });
  });

  describe('custom validators', () => {
    it('ignores validators it does not know, keeping the property and its declared type', () => {
      expect(prop(Custom, 'even')).toEqual({ type: 'number' });
      expect(prop(Custom, 'evenInt')).toEqual({ type: 'integer' });
    });
  });

  describe('caching', () => {
    it('returns the same frozen object every time it is asked', () => {
      const first = dtoJsonSchema(Constraints);
      expect(dtoJsonSchema(Constraints)).toBe(first);
      expect(Object.isFrozen(first)).toBe(true);
      expect(Object.isFrozen(first.properties)).toBe(true);
    });
  });
});
