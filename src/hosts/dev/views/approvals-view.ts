import type { PendingApproval } from '../../../../index.js';
import { html, type SafeHtml } from './safe-html.js';

/**
 * The calls waiting for a decision: full arguments and the gate's message, with the
 * decisions the ticket allows (a call a crash cut off mid-run allows only retry and skip).
 * Edited arguments are checked by the server against the
 * tool's input before anything runs; a refusal shows in the form's error line.
 */
export function approvalsView(sessionId: string, pending: readonly PendingApproval[]): SafeHtml {
  if (pending.length === 0) return html``;
  const action = `/api/sessions/${encodeURIComponent(sessionId)}/decisions`;
  return html`<section class="approvals"><h2>Waiting for approval</h2>${pending.map((p) => {
    const allowed = p.ticket.allowedDecisions ?? ['approve', 'reject', 'edit'];
    return html`<form class="approval" data-post="${action}" data-kind="decision" data-call="${p.callId}">
<div class="approval-head"><span class="tool">${p.tool}</span> <code class="call-id">${p.callId}</code></div>
<p class="ticket">${p.ticket.message}</p>
<pre class="args">${prettyJson(p.arguments)}</pre>
${allowed.includes('edit') ? html`<label>Edit the arguments (JSON)<textarea name="args" rows="4" spellcheck="false">${prettyJson(p.arguments)}</textarea></label>` : ''}
${allowed.includes('reject') ? html`<label>Reason for a rejection (told to the model)<input name="message" type="text"></label>` : ''}
<div class="actions">
${allowed.includes('approve') ? html`<button type="submit" name="decision" value="approve" class="approve">Approve</button>` : ''}
${allowed.includes('edit') ? html`<button type="submit" name="decision" value="edit">Run with edited arguments</button>` : ''}
${allowed.includes('reject') ? html`<button type="submit" name="decision" value="reject" class="reject">Reject</button>` : ''}
${allowed.includes('retry') ? html`<button type="submit" name="decision" value="retry" class="approve">Retry (run it again)</button>` : ''}
${allowed.includes('skip') ? html`<button type="submit" name="decision" value="skip" class="reject">Skip (report it skipped)</button>` : ''}
</div>
<p class="error" role="alert"></p>
</form>`;
  })}</section>`;
}

/** The model's JSON text, indented when it parses; as written when it does not. */
function prettyJson(text: string): string {
  try {
    return JSON.stringify(JSON.parse(text), null, 2);
  } catch {
    return text;
  }
}
