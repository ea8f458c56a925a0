import type { PendingApproval } from '../../../../index.js';
import type { ChatMessage } from '../../../../index.js';
import type { TurnRecord } from '../../../../stores.js';
import type { TurnTimeline } from '../timeline/turn-timeline.js';
import { approvalsView } from './approvals-view.js';
import { html, type SafeHtml } from './safe-html.js';
import { statusBadge } from './sessions-page.js';
import { formatMs, timelineView } from './timeline-view.js';
import { transcriptView } from './transcript-view.js';

/** Everything the session page shows. */
export interface SessionView {
  readonly id: string;
  /** The agent that owns it; `undefined` for a session not stored yet. */
  readonly agent: string | undefined;
  readonly status: string;
  readonly transcript: readonly ChatMessage[];
  readonly turns: readonly { readonly record: TurnRecord; readonly timeline: TurnTimeline; readonly dropped: number }[];
  /** The turn running now, from live events. */
  readonly live: { readonly turn: number; readonly timeline: TurnTimeline } | undefined;
  readonly pending: readonly PendingApproval[];
  /** Whether the store keeps turn events (else only turns run while this page's server is up show a timeline). */
  readonly traces: boolean;
}

/** The `#main` region of a session: approvals, each turn's timeline, the transcript. */
export function sessionMain(view: SessionView): SafeHtml {
  const running = view.live;
  const turns = [...view.turns].reverse().filter((t) => !running || t.record.index !== running.turn);
  return html`<section class="session" data-session="${view.id}">
<div class="heading"><h1>Session <code>${view.id}</code></h1>${statusBadge(view.status)}</div>
<p class="meta">${view.agent ? html`agent <b>${view.agent}</b> · ` : html`new session · `}${counted(view.turns.length, 'turn')}${view.traces ? '' : html` · <em>this store keeps no turn events</em>`}</p>
${approvalsView(view.id, view.pending)}
${running ? html`<article class="turn live" data-turn="${running.turn}"><h2>Turn ${running.turn + 1} ${statusBadge('running')}</h2>${timelineView(running.timeline)}</article>` : ''}
${turns.map(
  ({ record, timeline, dropped }) => html`<article class="turn" data-turn="${record.index}">
<h2>Turn ${record.index + 1} ${statusBadge(record.status)}</h2>
<p class="meta">${counted(record.rounds, 'round')} · ${counted(record.toolCalls, 'tool call')} · ${tokens(record)} tokens · ${formatMs(Date.parse(record.endedAt) - Date.parse(record.startedAt))}${record.error ? html` · <span class="err">${record.error.code}: ${record.error.message}</span>` : ''}</p>
<p class="input">${record.input}</p>
${timelineView(timeline, dropped)}
</article>`,
)}
<h2>Transcript</h2>
${transcriptView(view.transcript)}
</section>`;
}

/** The chat box beside the main region: it stays put while `#main` re-renders, so typed text survives. */
export function chatAside(sessionId: string): SafeHtml {
  return html`<aside class="chat">
<form data-post="/api/sessions/${encodeURIComponent(sessionId)}/messages" data-kind="message">
<label for="message">Send a message</label>
<textarea id="message" name="message" rows="3" required></textarea>
<div class="actions"><button type="submit">Send</button></div>
<p class="error" role="alert"></p>
</form>
<h3>Live</h3>
<pre id="stream" class="stream"></pre>
<ol id="live" class="live-log"></ol>
</aside>`;
}

/** `1 turn`, `2 turns`. */
function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function tokens(record: TurnRecord): number {
  return Object.values(record.usage).reduce((sum, u) => sum + u.inputTokens + u.outputTokens, 0);
}
