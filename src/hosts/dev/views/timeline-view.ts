import type { TurnTimeline } from '../timeline/turn-timeline.js';
import { html, type SafeHtml } from './safe-html.js';

/** A turn's waterfall: one row per span or mark, bars placed by time (positions are numbers, never text). */
export function timelineView(timeline: TurnTimeline, dropped = 0): SafeHtml {
  if (timeline.rows.length === 0) return html`<p class="empty">No recorded events for this turn.</p>`;
  const total = Math.max(timeline.duration, 1);
  const pct = (ms: number) => Math.min(100, Math.max(0, (ms / total) * 100)).toFixed(2);
  return html`<div class="waterfall">
${timeline.rows.map(
  (row) => html`<div class="wf-row k-${row.kind} d-${row.depth}${row.failed ? ' failed' : ''}" data-kind="${row.kind}">
<div class="wf-label"><span class="kind">${row.kind}</span> <span class="name">${row.label}</span><div class="wf-detail">${row.detail}</div></div>
<div class="wf-track"><span class="wf-bar${row.duration === 0 ? ' mark' : ''}" style="left:${pct(row.start)}%;width:${row.duration === 0 ? '0' : pct(Math.max(row.duration, total / 200))}%"></span></div>
<div class="wf-time">${row.duration === 0 ? `@${formatMs(row.start)}` : formatMs(row.duration)}</div>
</div>`,
)}
${dropped > 0 ? html`<p class="note">${dropped} later events were not kept (the store keeps a bounded number per turn).</p>` : ''}
</div>`;
}

/** `0.4 ms`, `12 ms`, `1.25 s`. */
export function formatMs(ms: number): string {
  if (ms < 1) return `${ms.toFixed(1)} ms`;
  if (ms < 1000) return `${Math.round(ms)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}
