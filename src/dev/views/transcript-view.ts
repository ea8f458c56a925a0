import type { ChatMessage } from '../../models/model-provider.js';
import { html, type SafeHtml } from './safe-html.js';

/** The conversation as stored: user, assistant (with the tool calls it asked for) and tool messages. */
export function transcriptView(transcript: readonly ChatMessage[]): SafeHtml {
  if (transcript.length === 0) return html`<p class="empty">No messages yet.</p>`;
  return html`<ol class="transcript">${transcript.map(
    (m) => html`<li class="msg r-${m.role}" data-role="${m.role}">
<div class="who">${m.role}${m.name ? html` · ${m.name}` : ''}</div>
${m.content ? html`<div class="text">${m.content}</div>` : ''}
${(m.toolCalls ?? []).map((c) => html`<div class="call"><span class="tool">${c.name}</span> <code>${c.arguments}</code></div>`)}
</li>`,
  )}</ol>`;
}
