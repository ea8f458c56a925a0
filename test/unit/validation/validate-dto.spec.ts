import 'reflect-metadata';
import { Type } from 'class-transformer';
import { ArrayMaxSize, IsArray, IsIn, IsInt, IsOptional, IsString, Max, Min, ValidateNested } from 'class-validator';
import {
  formatFieldErrors,
  validateDto,
  validateJson,
  type DtoValidation,
  type FieldError,
} from '../../../src/engine/validation/validate-dto.js';

class Filter {
  @IsString() column!: string;
  @IsIn(['=', '<', '>']) op!: string;
  @IsOptional() @IsString() value?: string;
}

class Range {
  @IsInt() from!: number;
  @IsInt() to!: number;
}

class SearchInput {
  @IsString() sql!: string;
  @IsInt() @Min(1) @Max(500) limit = 10;
  @IsOptional() @IsArray() @ArrayMaxSize(3) @ValidateNested({ each: true }) @Type(() => Filter) filters?: Filter[];
  @IsOptional() @ValidateNested() @Type(() => Range) range?: Range;
  // Declared but not validated: never accepted from the caller, yet not an error when absent.
  note?: string;
  internal = 'kept';
}

function errorsOf<T>(result: DtoValidation<T>): readonly FieldError[] {
  if (result.ok) throw new Error(`expected a failure, got ${JSON.stringify(result.value)}`);
  return result.errors;
}

function paths<T>(result: DtoValidation<T>): string[] {
  return errorsOf(result).map((error) => error.path);
}

describe('validateDto', () => {
  describe('valid input', () => {
    it('returns an instance of the DTO with nested DTO instances', () => {
      const result = validateDto(SearchInput, {
        sql: 'select 1',
        limit: 5,
        filters: [{ column: 'a', op: '=' }],
        range: { from: 1, to: 2 },
      });
      if (!result.ok) throw new Error(formatFieldErrors(result.errors));
      expect(result.value).toBeInstanceOf(SearchInput);
      expect(result.value.limit).toBe(5);
      expect(result.value.filters?.[0]).toBeInstanceOf(Filter);
      expect(result.value.range).toBeInstanceOf(Range);
    });

    it('keeps property defaults when a field is absent', () => {
      const result = validateDto(SearchInput, { sql: 'select 1' });
      expect(result.ok && result.value.limit).toBe(10);
      expect(result.ok && result.value.internal).toBe('kept');
    });

    it('keeps a default when a field is explicitly undefined', () => {
      const result = validateDto(SearchInput, { sql: 'select 1', limit: undefined });
      expect(result.ok && result.value.limit).toBe(10);
    });
  });

  describe('invalid input', () => {
    it('lists every bad field, not only the first', () => {
      const errors = errorsOf(validateDto(SearchInput, { sql: 42, limit: 0 }));
      expect(errors).toEqual([
        { path: 'sql', messages: ['sql must be a string'] },
        { path: 'limit', messages: ['limit must not be less than 1'] },
      ]);
    });

    it('does not coerce types: a numeric string is not a number', () => {
      expect(errorsOf(validateDto(SearchInput, { sql: 'x', limit: '5' }))).toEqual([
        { path: 'limit', messages: expect.arrayContaining(['limit must be an integer number']) },
      ]);
    });

    it('reports nested fields with dotted and indexed paths', () => {
      const result = validateDto(SearchInput, {
        sql: 'x',
        filters: [
          { column: 'a', op: '=' },
          { column: 3, op: 'like' },
        ],
        range: { from: 1, to: 'z' },
      });
      expect(paths(result)).toEqual(['filters[1].column', 'filters[1].op', 'range.to']);
    });

    it('reports a nested value that is not an object at its own path', () => {
      expect(paths(validateDto(SearchInput, { sql: 'x', range: 'soon' }))).toEqual(['range']);
      expect(paths(validateDto(SearchInput, { sql: 'x', filters: ['a', { column: 'c', op: '<' }] }))).toEqual([
        'filters[0]',
      ]);
    });

    it('reports rules on an array itself at the array path', () => {
      const filter = { column: 'c', op: '<' };
      expect(errorsOf(validateDto(SearchInput, { sql: 'x', filters: [filter, filter, filter, filter] }))).toEqual([
        { path: 'filters', messages: ['filters must contain no more than 3 elements'] },
      ]);
    });
  });

  describe('unknown properties', () => {
    it('forbids properties the DTO does not declare, at any depth', () => {
      const result = validateDto(SearchInput, { sql: 'x', drop: true, range: { from: 1, to: 2, step: 1 } });
      expect(errorsOf(result)).toEqual([
        { path: 'drop', messages: ['property drop should not exist'] },
        { path: 'range.step', messages: ['property step should not exist'] },
      ]);
    });

    it('forbids an undecorated class field when the caller sends it', () => {
      expect(paths(validateDto(SearchInput, { sql: 'x', note: 'hi', internal: 'overwritten' }))).toEqual([
        'note',
        'internal',
      ]);
    });

    it('drops unknown properties instead when forbidUnknown is false', () => {
      const result = validateDto(SearchInput, { sql: 'x', drop: true }, { forbidUnknown: false });
      expect(result.ok).toBe(true);
      expect(result.ok && 'drop' in result.value).toBe(false);
    });

    it('refuses __proto__ and constructor like undeclared properties, and never lets them through to the instance', () => {
      const result = validateDto(SearchInput, JSON.parse('{"sql":"x","__proto__":{"polluted":1},"constructor":1}'));
      expect(result.ok).toBe(false);
      expect(!result.ok && result.errors.map((e) => e.path)).toEqual(['__proto__', 'constructor']);
      const stripped = validateDto(SearchInput, JSON.parse('{"sql":"x","__proto__":{"polluted":1}}'), {
        forbidUnknown: false,
      });
      expect(stripped.ok && Object.getPrototypeOf(stripped.value)).toBe(SearchInput.prototype);
      expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    });
  });

  describe('non-object input', () => {
    it.each([
      [null, 'null'],
      [[], 'an array'],
      ['select 1', 'a string'],
      [5, 'a number'],
      [undefined, 'undefined'],
    ])('rejects %p as a whole with an (input) error', (input, kind) => {
      expect(errorsOf(validateDto(SearchInput, input))).toEqual([
        { path: '(input)', messages: [`arguments must be a JSON object, not ${kind}`] },
      ]);
    });
  });
});

describe('validateJson', () => {
  it('parses model arguments before validating them', () => {
    const result = validateJson(SearchInput, '{"sql":"select 1","limit":3}');
    expect(result.ok && result.value.limit).toBe(3);
  });

  it('reports invalid JSON as an (input) error carrying the parser message', () => {
    const errors = errorsOf(validateJson(SearchInput, '{"sql": '));
    expect(errors).toHaveLength(1);
    expect(errors[0]?.path).toBe('(input)');
    expect(errors[0]?.messages[0]).toMatch(/^arguments are not valid JSON: .+/);
  });

  it('treats an empty string as {}', () => {
    expect(errorsOf(validateJson(SearchInput, ''))).toEqual([{ path: 'sql', messages: ['sql must be a string'] }]);
    expect(validateJson(Range, '  ').ok).toBe(false);
  });

  it('rejects JSON that is not an object', () => {
    expect(paths(validateJson(SearchInput, '[1,2]'))).toEqual(['(input)']);
  });
});

describe('formatFieldErrors', () => {
  it('writes one line per field, every field listed, messages joined', () => {
    const text = formatFieldErrors([
      { path: 'sql', messages: ['sql must be a string'] },
      {
        path: 'filters[0].op',
        messages: ['op must be one of the following values: =, <, >', 'op should not be empty'],
      },
    ]);
    expect(text).toBe(
      '- sql: sql must be a string\n- filters[0].op: op must be one of the following values: =, <, >; op should not be empty',
    );
  });

  it('formats the errors validateDto returns', () => {
    const errors = errorsOf(validateDto(SearchInput, { sql: 1, limit: 1000 }));
    expect(formatFieldErrors(errors).split('\n')).toEqual([
      '- sql: sql must be a string',
      '- limit: limit must not be greater than 500',
    ]);
  });
});
