import { argsOf, type ToolCallInfo } from '../../../index.js';

class Refund {
  amountCents!: number;
  reason!: string;
}

const call = (args: unknown): ToolCallInfo => ({
  callId: 'c1',
  tool: 'refunds.issue',
  plugin: 'refunds',
  tags: [],
  args,
  round: 1,
});

describe('argsOf: a call’s arguments in a gate, without a cast', () => {
  it('gives the parsed arguments, keyed by the DTO’s fields', () => {
    const { amountCents, reason } = argsOf<Refund>(call({ amountCents: 4000, reason: 'late' }));

    expect(amountCents).toBe(4000);
    expect(reason).toBe('late');
  });

  it.each([
    ['garbled text', '{"amountCents": 40'],
    ['null', null],
    ['an array', [1, 2]],
    ['a number', 7],
  ])('gives {} for arguments that are %s', (_what, args) => {
    expect(argsOf<Refund>(call(args))).toEqual({});
  });
});
