import { html, type SafeHtml } from './safe-html.js';

/** One row of the sessions list. */
export interface SessionRow {
  readonly id: string;
  readonly agent: string;
  readonly turns: number;
  readonly updatedAt: string;
  /** The last turn's status, or `running` while a turn runs here. */
  readonly status: string;
}

/** The `#main` region of the sessions list. */
export function sessionsMain(rows: readonly SessionRow[]): SafeHtml {
  const body =
    rows.length === 0
      ? html`<p class="empty">No sessions in the store yet. Start one.</p>`
      : html`<table class="sessions">
<thead><tr><th>Session</th><th>Status</th><th>Agent</th><th>Turns</th><th>Last activity</th></tr></thead>
<tbody>${rows.map(
          (r) =>
            html`<tr data-session="${r.id}"><td><a href="/sessions/${encodeURIComponent(r.id)}">${r.id}</a></td><td>${statusBadge(r.status)}</td><td>${r.agent}</td><td>${r.turns}</td><td><time datetime="${r.updatedAt}">${r.updatedAt.replace('T', ' ').slice(0, 19)}</time></td></tr>`,
        )}</tbody>
</table>`;
  return html`<section><div class="heading"><h1>Sessions</h1><a class="button" href="/sessions/new">New session</a></div>${body}</section>`;
}

/** A coloured status label; the class is picked from a fixed list, never from the text. */
export function statusBadge(status: string): SafeHtml {
  const known = ['completed', 'suspended', 'failed', 'running', 'blocked', 'cancelled', 'max_rounds'];
  return html`<span class="status s-${known.includes(status) ? status : 'other'}">${status}</span>`;
}
