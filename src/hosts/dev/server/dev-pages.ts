import { randomUUID } from 'node:crypto';
import { Hono } from 'hono';
import { layout } from '../views/layout.js';
import { pluginsMain } from '../views/plugins-page.js';
import type { SafeHtml } from '../views/safe-html.js';
import { chatAside, sessionMain } from '../views/session-page.js';
import { sessionsMain } from '../views/sessions-page.js';
import type { DevServerOptions } from './dev-host.js';
import type { SessionReader } from './session-reader.js';

/** The HTML pages, and the `…/fragment` of each that the browser script re-renders live. */
export function devPages(options: DevServerOptions, reader: SessionReader): Hono {
  const pages = new Hono();
  const page = (body: SafeHtml) => body.toString();
  pages.get('/', async (c) =>
    c.html(
      page(
        layout('Sessions', sessionsMain(await reader.sessions()), {
          live: { events: '/api/events', fragment: '/fragment' },
        }),
      ),
    ),
  );
  pages.get('/fragment', async (c) => c.html(page(sessionsMain(await reader.sessions()))));
  pages.get('/sessions/new', (c) => c.redirect(`/sessions/${randomUUID()}`, 303));
  pages.get('/sessions/:id', async (c) => {
    const id = c.req.param('id');
    const path = `/sessions/${encodeURIComponent(id)}`;
    const live = { events: `/api/events?session=${encodeURIComponent(id)}`, fragment: `${path}/fragment` };
    return c.html(page(layout(`Session ${id}`, sessionMain(await reader.session(id)), { live, aside: chatAside(id) })));
  });
  pages.get('/sessions/:id/fragment', async (c) => c.html(page(sessionMain(await reader.session(c.req.param('id'))))));
  pages.get('/plugins', (c) => c.html(page(layout('Plugins', pluginsMain(options.app.describe())))));
  return pages;
}
