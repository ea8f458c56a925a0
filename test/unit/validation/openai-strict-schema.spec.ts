import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsEmail, IsInt, IsOptional, IsString, IsUrl, MaxLength, ValidateNested } from 'class-validator';
import { dtoJsonSchema } from '../../../src/validation/dto-json-schema.js';
import { dropNullOptionals, openAIStrictSchema } from '../../../src/validation/openai-strict-schema.js';
import { validateDto } from '../../../src/validation/validate-dto.js';

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
    expect((properties.address!.properties as Record<string, Record<string, unknown>>).zip!.type).toEqual(['string', 'null']);
  });

  it('keeps supported formats and drops the ones and keywords strict mode refuses', () => {
    expect(properties.email!.format).toBe('email');
    expect(properties.link!.format).toBeUndefined();
    expect(properties.number!.maxLength).toBeUndefined();
  });

  it('names a property it cannot express, with what to change', () => {
    const loose = openAIStrictSchema(dtoJsonSchema(Loose));
    expect(loose.problems).toEqual([expect.stringContaining('anything: has no type; give it a type validator')]);
  });
});

describe('dropNullOptionals', () => {
  it('turns null optionals back into absent fields so the DTO validates', () => {
    const source = dtoJsonSchema(Invoice);
    const answer = { number: 'A-1', total: null, email: 'a@b.co', link: null, address: { city: 'Oslo', zip: null } };
    // @IsOptional() lets null through: unmapped, the instance would carry null where its type says absent.
    const unmapped = validateDto(Invoice, answer);
    expect(unmapped.ok && (unmapped.value as Invoice).total).toBeNull();
    const mapped = dropNullOptionals(answer, source);
    expect(mapped).toEqual({ number: 'A-1', email: 'a@b.co', address: { city: 'Oslo' } });
    const checked = validateDto(Invoice, mapped);
    expect(checked.ok).toBe(true);
    expect(checked.ok && (checked.value as Invoice).total).toBeUndefined();
  });

  it('keeps a null for a required field, so validation reports it', () => {
    const mapped = dropNullOptionals({ number: null, email: 'a@b.co', address: { city: 'x' } }, dtoJsonSchema(Invoice));
    expect(mapped).toEqual({ number: null, email: 'a@b.co', address: { city: 'x' } });
    expect(validateDto(Invoice, mapped).ok).toBe(false);
  });
});
