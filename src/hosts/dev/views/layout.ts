import { html, type SafeHtml } from './safe-html.js';

/** What a page tells the browser script: where its live events come from and which fragment to re-render. */
export interface PageLive {
  /** The Server-Sent Events URL the page listens to. */
  readonly events: string;
  /** The URL of the `#main` fragment, fetched again when an event says something changed. */
  readonly fragment: string;
}

/** The page's icon, inline (no request: a browser would otherwise ask for /favicon.ico and get a 404). */
const FAVICON =
  'data:image/svg+xml,%3Csvg xmlns=%22http://www.w3.org/2000/svg%22 viewBox=%220 0 16 16%22%3E%3Crect width=%2216%22 height=%2216%22 rx=%223%22 fill=%22%233b5bdb%22/%3E%3Cpath d=%22M4 4h8M8 4v9%22 stroke=%22white%22 stroke-width=%222%22/%3E%3C/svg%3E';

/** The page frame: navigation, the `#main` region and the browser script (no inline script: the CSP forbids it). */
export function layout(title: string, main: SafeHtml, options: { live?: PageLive; aside?: SafeHtml } = {}): SafeHtml {
  const { live, aside } = options;
  return html`<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>${title} · trellis dev</title>
<link rel="stylesheet" href="/assets/dev.css">
<link rel="icon" href="${FAVICON}">
<script type="module" src="/assets/dev.js"></script>
</head>
<body${live ? html` data-events="${live.events}"` : ''}>
<header class="top"><a class="brand" href="/">trellis dev</a><nav><a href="/">Sessions</a><a href="/plugins">Plugins</a></nav></header>
<div class="page">
<main id="main"${live ? html` data-fragment="${live.fragment}"` : ''}>${main}</main>
${aside ?? ''}
</div>
</body>
</html>`;
}
