import type { ChatMessage } from '../../../../index.js';
import { describePart, IMAGE_MEDIA_TYPES, messageParts, type ContentPart } from '../../../../plugin.js';
import { html, type SafeHtml } from './safe-html.js';

const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;

/**
 * The conversation as stored: user, assistant (with the tool calls it asked for) and tool
 * messages. Images given as bytes show as `<img>` from a `data:` URL (the page's CSP allows
 * no other source), checked to be a known image type and base64 so nothing but an image can
 * come of it; image URLs, and files, show as a placeholder with media type, name and size.
 */
export function transcriptView(transcript: readonly ChatMessage[]): SafeHtml {
  if (transcript.length === 0) return html`<p class="empty">No messages yet.</p>`;
  return html`<ol class="transcript">${transcript.map(
    (m) => html`<li class="msg r-${m.role}" data-role="${m.role}">
<div class="who">${m.role}${m.name ? html` · ${m.name}` : ''}</div>
${body(m)}
${(m.toolCalls ?? []).map((c) => html`<div class="call"><span class="tool">${c.name}</span> <code>${c.arguments}</code></div>`)}
</li>`,
  )}</ol>`;
}

function body(message: ChatMessage): SafeHtml | string {
  const parts = messageParts(message);
  if (!parts.some((part) => part.type !== 'text'))
    return message.content ? html`<div class="text">${message.content}</div>` : '';
  return html`${parts.map(partView)}`;
}

function partView(part: ContentPart): SafeHtml {
  if (part.type === 'text') return html`<div class="text">${part.text}</div>`;
  if (
    part.type === 'image' &&
    part.data !== undefined &&
    IMAGE_MEDIA_TYPES.includes(part.mediaType) &&
    BASE64.test(part.data)
  ) {
    return html`<figure class="part part-image"><img src="data:${part.mediaType};base64,${part.data}" alt="${describePart(part)}"><figcaption>${describePart(part)}</figcaption></figure>`;
  }
  return html`<div class="part part-${part.type}">${describePart(part)}</div>`;
}
