import type { PendingApproval } from '../../../index.js';
import { approvalsView } from '../../../src/hosts/dev/views/approvals-view.js';

const call = (allowedDecisions?: PendingApproval['ticket']['allowedDecisions']): PendingApproval => ({
  callId: 'c1',
  tool: 'bank.pay',
  arguments: '{"amount":5}',
  ticket: { message: 'Pay 5?', ...(allowedDecisions && { allowedDecisions }) },
});
const buttons = (pending: PendingApproval) =>
  [...String(approvalsView('s1', [pending])).matchAll(/<button [^>]*value="(\w+)"/g)].map((m) => m[1]);

describe('the dev page offers the decisions a waiting call allows', () => {
  it('approve, edit and reject by default; only what the ticket names otherwise', () => {
    expect(buttons(call())).toEqual(['approve', 'edit', 'reject']);
    expect(buttons(call(['approve', 'reject']))).toEqual(['approve', 'reject']);
  });

  it('retry and skip for a call a crash cut off mid-run, and nothing else', () => {
    expect(buttons(call(['retry', 'skip']))).toEqual(['retry', 'skip']);
  });
});
