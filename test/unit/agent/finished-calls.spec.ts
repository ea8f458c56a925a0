import { FinishedCalls } from '../../../src/agent/turn/finished-calls.js';
import type { ToolCallRecord } from '../../../index.js';

const ok = (callId: string, tool: string, round: number, value: unknown, durationMs: number): ToolCallRecord => ({
  callId,
  tool,
  round,
  ok: true,
  value,
  durationMs,
});
const failed = (callId: string, tool: string, round: number, durationMs: number): ToolCallRecord => ({
  callId,
  tool,
  round,
  ok: false,
  error: { code: 'ToolFailed', message: `${tool} failed`, retryable: false },
  durationMs,
});

describe('FinishedCalls (the finished calls of a turn, kept compact)', () => {
  it('gives back each record as it was added: same fields, same order of keys, same values', () => {
    const finished = new FinishedCalls();
    const value = { rows: [1, 2] };
    const records = [
      ok('c1', 'a.one', 1, value, 0.125),
      failed('c2', 'a.two', 2, 3),
      ok('c3', 'a.one', 3, undefined, 0),
      ok('c4', 'a.three', 12, 'text', 1e-9),
    ];
    for (const record of records)
      finished.add({ id: record.callId, name: record.tool, arguments: '{}' } as never, record);

    const built = finished.records();

    expect(finished.length).toBe(4);
    expect(built).toStrictEqual(records);
    expect(built.map((r) => Object.keys(r))).toEqual(records.map((r) => Object.keys(r)));
    // A value is given back as the turn result shows it: a copy with secrets redacted.
    expect(built[0]!.value).toStrictEqual(value);
    expect(built[1]!.error).toBe(records[1]!.error);
    // Built anew on each read: a caller that changes the list does not change the turn's.
    expect(finished.records()).not.toBe(built);
    expect(finished.records()).toStrictEqual(records);
  });

  it('keeps whole a record the compact form cannot hold: a sub-agent usage, or an id or tool other than the call', () => {
    const finished = new FinishedCalls();
    const delegated: ToolCallRecord = {
      ...ok('c1', 'ask_billing', 1, 'answer', 2),
      usage: { inputTokens: 1, outputTokens: 2, totalTokens: 3, byModel: {}, byAgent: {} },
    };
    const renamed = ok('c2-rewritten', 'a.one', 1, 1, 2);
    finished.add({ id: 'c1', name: 'ask_billing' }, delegated);
    finished.add({ id: 'c2', name: 'a.one' }, renamed);
    finished.addRecord(failed('c3', 'a.two', 1, 0));

    const built = finished.records();

    expect(built).toStrictEqual([delegated, renamed, failed('c3', 'a.two', 1, 0)]);
    expect(built[0]).toBe(delegated);
  });

  it('takes over another turn runner’s calls after its own (a handoff)', () => {
    const before = new FinishedCalls();
    before.add({ id: 'c1', name: 'a.one' }, ok('c1', 'a.one', 1, 1, 1));
    before.addRecord(failed('c2', 'a.two', 1, 2));
    const after = new FinishedCalls();
    after.addAll(before);
    after.add({ id: 'c3', name: 'a.one' }, ok('c3', 'a.one', 2, 3, 3));

    expect(after.records()).toStrictEqual([
      ok('c1', 'a.one', 1, 1, 1),
      failed('c2', 'a.two', 1, 2),
      ok('c3', 'a.one', 2, 3, 3),
    ]);
    expect(before.records()).toHaveLength(2);
  });
});
