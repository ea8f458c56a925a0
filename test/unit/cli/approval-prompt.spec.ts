import type { PendingApproval, TurnResult } from '../../../index.js';
import type { StoredSession } from '../../../stores.js';
import { approvalLines } from '../../../src/hosts/cli/render/approval-prompt.js';
import { escapeControl } from '../../../src/hosts/cli/render/terminal-text.js';
import { toolActivityLine } from '../../../src/hosts/cli/render/tool-activity.js';
import { transcriptLines } from '../../../src/hosts/cli/render/transcript.js';
import { pendingLines, replyLines } from '../../../src/hosts/cli/render/turn-summary.js';

const ESC = '\u001b';
// A long query whose dangerous part is at the end, and an ESC sequence that would erase the line.
const SQL = `SELECT ${'id, '.repeat(80)}name FROM customers; -- ${ESC}[2K${ESC}[1A harmless\u202e DROP TABLE orders`;
const pending: PendingApproval = {
  callId: 'call_1',
  tool: 'export.csv',
  arguments: JSON.stringify({ sql: SQL, filename: 'all.csv', apiKey: 'sk-proj-ABCDEFGHIJKLMNOPQRSTUV' }),
  ticket: { message: `Write all.csv with the rows of: ${SQL}`, allowedDecisions: ['approve', 'reject'] },
};

function hasRawControl(lines: readonly string[]): boolean {
  return lines.some((line) => /[\u001b\u202e\r]/.test(line));
}

describe('the approval prompt shows everything that is approved, safely', () => {
  it('shows the tool, the full message and the full arguments; nothing is cut', () => {
    const text = approvalLines(pending).join('\n');
    expect(text).toContain('export.csv (call_1) waits for approval');
    expect(text).toContain('DROP TABLE orders');
    expect(text.split('DROP TABLE orders')).toHaveLength(3); // once in the message, once in the arguments
    expect(text).toContain('"filename": "all.csv"');
    expect(text).toContain('id, '.repeat(80));
  });

  it('escapes ESC sequences and bidi overrides instead of passing them to the terminal', () => {
    const lines = approvalLines(pending);
    expect(hasRawControl(lines)).toBe(false);
    expect(lines.join('\n')).toContain('\\x1b[2K');
    expect(lines.join('\n')).toContain('\\u202e');
  });

  it('redacts secret arguments', () => {
    const text = approvalLines(pending).join('\n');
    expect(text).toContain('"apiKey": "[Redacted]"');
    expect(text).not.toContain('sk-proj-');
  });

  it('run/resume output (pendingLines) shows the same full, escaped prompt', () => {
    const result = {
      status: 'suspended',
      suspended: [pending],
      rounds: 1,
      toolCalls: [],
      usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
    } as unknown as TurnResult;
    const lines = pendingLines(result, 's1');
    expect(lines.join('\n')).toContain('DROP TABLE orders');
    expect(hasRawControl(lines)).toBe(false);
    expect(lines.at(-1)).toContain('trellis resume s1 --approve call_1');
  });

  it('sessions show (transcriptLines) shows the waiting call in full, escaped', () => {
    const session = {
      id: 's1',
      agent: 'desk',
      revision: 1,
      createdAt: '',
      updatedAt: '',
      state: {},
      turns: [],
      transcript: [
        { role: 'user', content: `hi${ESC}]0;owned${'\u0007'}` },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'call_1', name: 'export.csv', arguments: pending.arguments }],
        },
      ],
      suspension: { input: 'export all', pending: [pending] },
    } as unknown as StoredSession;
    const lines = transcriptLines(session);
    expect(lines.join('\n')).toContain('DROP TABLE orders');
    expect(hasRawControl(lines)).toBe(false);
    expect(lines.join('\n')).toContain('\\x1b]0;owned\\x07');
  });

  it('sessions show says how each waiting call can be decided, as the call journal will take it', () => {
    const call = (
      callId: string,
      allowedDecisions?: PendingApproval['ticket']['allowedDecisions'],
    ): PendingApproval => ({
      callId,
      tool: 'bank.pay',
      arguments: '{}',
      ticket: { message: 'Pay?', ...(allowedDecisions && { allowedDecisions }) },
    });
    const session = {
      id: 's2',
      agent: 'desk',
      revision: 3,
      createdAt: '',
      updatedAt: '',
      state: {},
      turns: [],
      transcript: [],
      suspension: {
        input: 'pay',
        pending: [call('fresh'), call('narrow', ['approve', 'reject']), call('cut'), call('queued')],
        decisions: [
          { callId: 'cut', decision: 'approve' },
          { callId: 'queued', decision: 'approve' },
        ],
        started: ['cut'],
      },
    } as unknown as StoredSession;
    const decide = transcriptLines(session).filter((line) => /^ {4}(decide|cut off|decided)/.test(line));
    expect(decide).toEqual([
      "    decide: trellis resume s2 --approve fresh   (or --reject fresh, --edit fresh='{…}')",
      '    decide: trellis resume s2 --approve narrow   (or --reject narrow)',
      '    cut off mid-run (it may or may not have run): trellis resume s2 --retry cut   (or --skip cut; a tool marked idempotent is run again by any resume)',
      '    decided (approve) before the process stopped; it is carried out on the next resume of s2',
    ]);
  });

  it('tool activity lines and replies never carry raw control characters', () => {
    expect(
      hasRawControl([
        toolActivityLine({ type: 'tool.suspended', sessionId: 's', callId: 'c', tool: 't', message: SQL })!,
      ]),
    ).toBe(false);
    expect(
      hasRawControl(
        replyLines({
          status: 'completed',
          reply: `ok${ESC}[31m red`,
          rounds: 1,
          toolCalls: [],
          usage: { inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        } as unknown as TurnResult),
      ),
    ).toBe(false);
  });

  it('escapeControl keeps line feeds and tabs', () => {
    expect(escapeControl('a\n\tb\r\u0008')).toBe('a\n\tb\\x0d\\x08');
  });
});
