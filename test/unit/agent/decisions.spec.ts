import { validateDecisions } from '../../../src/agent/durability/decisions.js';
import { SUSPENSION_VERSION, type SuspensionRecord } from '../../../src/agent/durability/suspension-record.js';
import type { Decision } from '../../../src/agent/turn/turn-result.js';

function record(overrides: Partial<SuspensionRecord> = {}): SuspensionRecord {
  return {
    version: SUSPENSION_VERSION,
    turnIndex: 0,
    input: 'pay',
    startedAt: '2026-01-01T00:00:00.000Z',
    instructions: 'x',
    rounds: 1,
    messages: [],
    calls: [
      { callId: 'a', tool: 'pay.send', arguments: '{}' },
      { callId: 'b', tool: 'pay.send', arguments: '{}' },
    ],
    results: {},
    pending: [
      { callId: 'a', tool: 'pay.send', arguments: '{}', ticket: { message: 'ok?' } },
      {
        callId: 'b',
        tool: 'pay.send',
        arguments: '{}',
        ticket: { message: 'ok?', allowedDecisions: ['approve', 'reject'] },
      },
    ],
    decisions: [],
    toolCalls: [],
    usage: {},
    ...overrides,
  };
}

const check = (decisions: unknown, r = record()) => validateDecisions(r, decisions as Decision[], 's1');

describe('validateDecisions', () => {
  it('returns the decisions to apply, in the order given', () => {
    const fresh = check([
      { callId: 'b', decision: 'reject' },
      { callId: 'a', decision: 'edit', args: { x: 1 } },
    ]);
    expect(fresh.map((d) => d.callId)).toEqual(['b', 'a']);
  });

  it('skips a decision on a call already decided, and a duplicate in the same list', () => {
    const r = record({ decisions: [{ callId: 'a', decision: 'approve' }] });
    expect(
      check(
        [
          { callId: 'a', decision: 'reject' },
          { callId: 'b', decision: 'approve' },
          { callId: 'b', decision: 'reject' },
        ],
        r,
      ),
    ).toEqual([{ callId: 'b', decision: 'approve' }]);
  });

  it.each([
    ['no decisions', []],
    ['not a list', { callId: 'a', decision: 'approve' }],
    ['an unknown kind', [{ callId: 'a', decision: 'maybe' }]],
    ['a missing callId', [{ decision: 'approve' }]],
    ['a call that is not waiting', [{ callId: 'zz', decision: 'approve' }]],
    ['a kind the ticket does not allow', [{ callId: 'b', decision: 'edit', args: {} }]],
    ['an edit without args', [{ callId: 'a', decision: 'edit' }]],
  ])('refuses %s with InvalidDecision, listing the calls waiting', (_what, decisions) => {
    expect(() => check(decisions)).toThrow(
      expect.objectContaining({ code: 'InvalidDecision', message: expect.stringContaining('a (pay.send)') }),
    );
  });

  it('refuses the whole list when one decision is bad, so nothing is applied', () => {
    expect(() =>
      check([
        { callId: 'a', decision: 'approve' },
        { callId: 'zz', decision: 'approve' },
      ]),
    ).toThrow(expect.objectContaining({ code: 'InvalidDecision' }));
  });
});
