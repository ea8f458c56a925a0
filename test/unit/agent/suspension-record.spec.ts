import {
  carriedTurnValues,
  parseSuspension,
  SUSPENSION_VERSION,
  type SuspensionRecord,
} from '../../../src/agent/durability/suspension-record.js';

const valid: SuspensionRecord = {
  version: SUSPENSION_VERSION,
  turnIndex: 2,
  input: 'pay',
  startedAt: '2026-01-01T00:00:00.000Z',
  instructions: 'x',
  rounds: 1,
  messages: [{ role: 'user', content: 'pay' }],
  calls: [{ callId: 'a', tool: 'pay.send', arguments: '{}' }],
  results: {},
  pending: [{ callId: 'a', tool: 'pay.send', arguments: '{}', ticket: { message: 'ok?' } }],
  decisions: [],
  toolCalls: [],
  usage: {},
};

describe('parseSuspension', () => {
  it('reads nothing as no suspension', () => {
    expect(parseSuspension(null, 's')).toBeUndefined();
    expect(parseSuspension(undefined, 's')).toBeUndefined();
  });

  it('accepts a valid record, also after a JSON round trip, and one without the optional turn and done fields', () => {
    expect(parseSuspension(valid, 's')).toBe(valid);
    expect(parseSuspension(JSON.parse(JSON.stringify(valid)), 's')).toEqual(valid);
    expect(parseSuspension({ ...valid, turn: { 'trellis.context_messages': [] }, done: 'bye' }, 's')).toMatchObject({
      done: 'bye',
    });
  });

  it.each<[string, unknown]>([
    ['not an object', 'record'],
    ['another version', { ...valid, version: 2 }],
    ['no version', { ...valid, version: undefined }],
    ['pending not a list', { ...valid, pending: {} }],
    ['messages not a list', { ...valid, messages: null }],
    ['rounds not a number', { ...valid, rounds: '1' }],
    ['input not text', { ...valid, input: 5 }],
    ['results missing', { ...valid, results: null }],
    [
      'a pending call without a ticket message',
      { ...valid, pending: [{ callId: 'a', tool: 'pay.send', arguments: '{}', ticket: {} }] },
    ],
    ['turn not an object', { ...valid, turn: [] }],
    ['done not text', { ...valid, done: 5 }],
  ])('refuses a record with %s: InvalidCheckpoint naming the session', (_what, value) => {
    expect(() => parseSuspension(value, 'sess-9')).toThrow(
      expect.objectContaining({ code: 'InvalidCheckpoint', message: expect.stringContaining("'sess-9'") }),
    );
  });
});

describe('carriedTurnValues', () => {
  it('keeps set values and drops unset ones and the skipped keys', () => {
    expect(
      carriedTurnValues({ a: 1, b: undefined, 'trellis.turn_input': 'x', c: null }, ['trellis.turn_input']),
    ).toEqual({ a: 1, c: null });
  });
});
