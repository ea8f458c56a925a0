import { ContextLevel, ContextScope } from '../../../src/engine/state/context-scope.js';
import { SessionState } from '../../../src/engine/state/session-state.js';
import { commitTurnValues } from '../../../src/engine/state/kernel-writes.js';
import type { StateSchema } from '../../../src/contract/state-schema.js';

/**
 * `commitTurnValues` (a tool's result recorded at turn level) builds the turn's new values key
 * by key instead of with a spread; what it builds must be what `{ ...values, [a]: x, [b]: y }`
 * would be, and the old values must stay untouched (a member's snapshot holds them).
 */
describe('commitTurnValues', () => {
  const schema: StateSchema = {
    stateKey: () => undefined,
    effectHandlers: () => undefined,
    actionHandler: () => undefined,
  };
  const KEYS = ['t.lookup.result', 'trellis.last_tool_results'] as const;

  function scopeWith(values: Record<string, unknown>): {
    scope: ContextScope;
    turn: ContextLevel;
    state: SessionState;
  } {
    const state = new SessionState('s1');
    const turn = new ContextLevel(values);
    return { scope: new ContextScope(state, turn, undefined), turn, state };
  }

  it('keeps the keys in the order a spread and two assignments give, and replaces the values object', () => {
    const before = { 'trellis.turn_input': 'hi', 't.lookup.result': 1, 'app.x': 2, 'trellis.last_tool_results': [] };
    const { scope, turn, state } = scopeWith(before);
    commitTurnValues(scope, schema, KEYS, 3, ['list']);

    const expected: Record<string, unknown> = { ...before };
    expected[KEYS[0]] = 3;
    expected[KEYS[1]] = ['list'];
    expect(turn.values).not.toBe(before);
    expect(Object.entries(turn.values)).toEqual(Object.entries(expected));
    expect(before).toEqual({
      'trellis.turn_input': 'hi',
      't.lookup.result': 1,
      'app.x': 2,
      'trellis.last_tool_results': [],
    });
    expect(state.revision).toBe(1);
  });

  it('appends keys the values do not have yet, first then second', () => {
    const { scope, turn } = scopeWith({ 'trellis.turn_input': 'hi', 'trellis.turn_index': 0 });
    commitTurnValues(scope, schema, KEYS, 'v', []);
    expect(Object.keys(turn.values)).toEqual(['trellis.turn_input', 'trellis.turn_index', ...KEYS]);
  });

  it('copies integer-like keys first, as a spread does, and an own __proto__ key as a plain property', () => {
    const before = JSON.parse('{"b": 1, "2": "two", "__proto__": {"polluted": true}, "1": "one"}') as Record<
      string,
      unknown
    >;
    const { scope, turn } = scopeWith(before);
    commitTurnValues(scope, schema, KEYS, 'r', []);
    expect(Object.keys(turn.values)).toEqual(['1', '2', 'b', '__proto__', ...KEYS]);
    expect(Object.getPrototypeOf(turn.values)).toBe(Object.prototype);
    expect(Object.getOwnPropertyDescriptor(turn.values, '__proto__')?.value).toEqual({ polluted: true });
    expect((turn.values as { polluted?: unknown }).polluted).toBeUndefined();
  });

  it('copies own keys only', () => {
    const inherited = Object.create({ 'app.inherited': 1 }) as Record<string, unknown>;
    inherited['app.own'] = 2;
    const { scope, turn } = scopeWith(inherited);
    commitTurnValues(scope, schema, KEYS, 'r', []);
    expect(Object.keys(turn.values)).toEqual(['app.own', ...KEYS]);
    expect(turn.values['app.inherited']).toBeUndefined();
  });
});
