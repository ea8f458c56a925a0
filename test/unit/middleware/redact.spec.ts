import { DEFAULT_REDACT_KEYS, REDACTED, redact, redactionKey } from '../../../plugins/middleware/redact.js';

const defaults = new Set(DEFAULT_REDACT_KEYS.map(redactionKey));

describe('redact', () => {
  it('copies without mutating the input', () => {
    const input = { password: 'p', keep: { token: 't' } };
    const output = redact(input, defaults);
    expect(output).toEqual({ password: REDACTED, keep: { token: REDACTED } });
    expect(input).toEqual({ password: 'p', keep: { token: 't' } });
  });

  it('matches key names ignoring case, dashes and underscores (x-api-key is a secret name too)', () => {
    expect(redact({ 'X-Api-Key': 1, api_key: 2, APIKEY: 3, apikeys: 4 }, defaults)).toEqual({
      'X-Api-Key': REDACTED,
      api_key: REDACTED,
      APIKEY: REDACTED,
      apikeys: 4,
    });
  });

  it('survives cycles and keeps repeated siblings', () => {
    const shared = { note: 'n' };
    const node: Record<string, unknown> = { a: shared, b: shared };
    node.self = node;
    expect(redact(node, defaults)).toEqual({ a: { note: 'n' }, b: { note: 'n' }, self: '[Circular]' });
  });

  it('leaves primitives, dates and errors loggable', () => {
    const at = new Date(0);
    expect(redact('plain', defaults)).toBe('plain');
    expect(redact({ at, err: new TypeError('bad') }, defaults)).toEqual({
      at,
      err: { name: 'TypeError', message: 'bad' },
    });
  });
});
