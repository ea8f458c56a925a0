import { parsePartialJson } from '../../../src/engine/validation/partial-json.js';

describe('parsePartialJson (a streamed answer read leniently)', () => {
  it('reads every prefix of an answer without throwing, ending with the whole value', () => {
    const value = {
      title: 'Q3 "report"\n',
      total: -12.5e2,
      ok: true,
      none: null,
      rows: [{ n: 1 }, { n: 2 }],
      unicode: '\u00e9',
    };
    const text = JSON.stringify(value);
    for (let at = 0; at <= text.length; at++) expect(() => parsePartialJson(text.slice(0, at))).not.toThrow();
    expect(parsePartialJson(text)).toEqual(value);
  });

  it('keeps what is complete, a string being written, and leaves out a key without value and a number or literal cut short', () => {
    expect(parsePartialJson('{"title":"Q3 rev')).toEqual({ title: 'Q3 rev' });
    expect(parsePartialJson('{"rows":[1,2')).toEqual({ rows: [1] });
    expect(parsePartialJson('{"rows":[1,2,')).toEqual({ rows: [1, 2] });
    expect(parsePartialJson('{"a":1,"b":')).toEqual({ a: 1 });
    expect(parsePartialJson('{"a":1,"bo')).toEqual({ a: 1 });
    expect(parsePartialJson('{"a":tr')).toEqual({});
    expect(parsePartialJson('{"a":"x\\')).toEqual({ a: 'x' });
  });

  it('reads nothing from text that does not start JSON, and stops at the first character that cannot continue it', () => {
    expect(parsePartialJson('Let me check the database.')).toBeUndefined();
    expect(parsePartialJson('{"a":1} trailing')).toEqual({ a: 1 });
    expect(parsePartialJson('{"a":1 "b":2}')).toEqual({ a: 1 });
  });

  it('keeps a "__proto__" key as a plain property, and does not read nesting past its bound', () => {
    const parsed = parsePartialJson('{"__proto__":{"polluted":true}}') as Record<string, unknown>;
    expect(Object.prototype.hasOwnProperty.call(parsed, '__proto__')).toBe(true);
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    const deep = '['.repeat(100_000);
    expect(parsePartialJson(deep, 64)).toBeDefined();
  });
});
